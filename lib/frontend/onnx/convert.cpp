// The ONNX op table: one converter per op type, building tensor-expression ops with the
// operator library (lib/frontend/ops) where it has the op and directly otherwise. Semantics
// follow the ONNX operator specification for opsets 11-17.
#include "convert.h"

#include <wm/frontend/ops.h>
#include <wm/support/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace wm::frontend {

using namespace wm::ir;

const char* opClassName(OpClass c) {
  switch (c) {
  case OpClass::Elementwise: return "elementwise";
  case OpClass::Injective: return "injective";
  case OpClass::View: return "view";
  case OpClass::Reduce: return "reduce";
  case OpClass::Anchor: return "anchor";
  case OpClass::Source: return "source";
  }
  return "?";
}

int64_t saturateInt(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

ConvertContext::ConvertContext(const Node& n, int o, std::vector<ConvertInput> inputs)
    : node(n), opset(o), in(std::move(inputs)) {}

const Tensor& ConvertContext::x(size_t i) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is required");
  if (!in[i].tensor) fail("input " + std::to_string(i) + " is empty; empty tensors are not supported");
  return *in[i].tensor;
}

const NDArray& ConvertContext::constant(size_t i, const char* what) const {
  if (!has(i)) fail(std::string("input '") + what + "' is required");
  if (!in[i].constant)
    fail(std::string("input '") + what + "' must be a constant (an initializer or computable from "
         "constants and static shapes)");
  return *in[i].constant;
}

std::vector<int64_t> ConvertContext::constInts(size_t i, const char* what) const {
  const NDArray& a = constant(i, what);
  std::vector<int64_t> r;
  for (double v : a.values()) r.push_back(saturateInt(v));
  return r;
}

void ConvertContext::fail(const std::string& msg) const {
  WM_USER_ERROR() << "node '" << node.name << "' (" << node.op << ", opset " << opset << "): " << msg;
}

namespace {
const Attribute* findAttr(const Node& n, const std::string& name) {
  auto it = n.attrs.find(name);
  return it == n.attrs.end() ? nullptr : &it->second;
}
} // namespace

int64_t ConvertContext::attrInt(const std::string& n, int64_t def) const {
  const Attribute* a = findAttr(node, n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Int) fail("attribute '" + n + "' must be an int");
  return a->i;
}
double ConvertContext::attrFloat(const std::string& n, double def) const {
  const Attribute* a = findAttr(node, n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Float) fail("attribute '" + n + "' must be a float");
  return a->f;
}
std::string ConvertContext::attrString(const std::string& n, const std::string& def) const {
  const Attribute* a = findAttr(node, n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::String) fail("attribute '" + n + "' must be a string");
  return a->s;
}
std::vector<int64_t> ConvertContext::attrInts(const std::string& n, const std::vector<int64_t>& def) const {
  const Attribute* a = findAttr(node, n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Ints) fail("attribute '" + n + "' must be a list of ints");
  return a->ints;
}
std::string ConvertContext::name(const std::string& suffix) const {
  return suffix.empty() ? node.name : node.name + "." + suffix;
}

namespace {

using Outs = std::vector<Tensor>;

std::vector<Expr> all(const std::vector<Var>& ax) { return {ax.begin(), ax.end()}; }

int64_t normAxis(const ConvertContext& c, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

Expr castTo(Expr e, DType t) { return e.dtype() == t ? e : cast(t, std::move(e)); }

using ops::broadcastIndex;

Shape broadcastAll(const ConvertContext& c, const std::vector<Tensor>& ts) {
  Shape out;
  for (auto& t : ts) out = ops::broadcastShape(out, t->shape, "node '" + c.node.name + "'");
  return out;
}

/// An n-ary element-wise op with NumPy broadcasting.
Tensor broadcastCompute(const ConvertContext& c, const std::string& tag, const std::vector<Tensor>& ts,
                        const std::function<Expr(const std::vector<Expr>&)>& f) {
  Shape out = broadcastAll(c, ts);
  return compute(c.name(), tag, out, [&](const std::vector<Var>& ax) {
    std::vector<Expr> vals;
    for (auto& t : ts) vals.push_back(read(t, broadcastIndex(t, out, ax)));
    return f(vals);
  });
}

void requireFloat(const ConvertContext& c, const Tensor& t, const char* what) {
  if (!isFloat(t->dtype))
    c.fail(std::string(what) + " must be floating point, not " + dtypeName(t->dtype));
}

ConvertFn unaryFn(const std::string& tag, std::function<Expr(Expr)> f, bool floatOnly = true) {
  return [tag, f, floatOnly](ConvertContext& c) -> Outs {
    const Tensor& x = c.x(0);
    if (floatOnly) requireFloat(c, x, "the input");
    return {compute(c.name(), tag, x->shape, [&](auto& ax) { return f(read(x, all(ax))); })};
  };
}

ConvertFn binaryFn(const std::string& tag, BinaryOp op) {
  return [tag, op](ConvertContext& c) -> Outs {
    const Tensor &a = c.x(0), &b = c.x(1);
    if (a->dtype != b->dtype)
      c.fail(std::string("operand types differ (") + dtypeName(a->dtype) + " vs " + dtypeName(b->dtype) + ")");
    if (a->dtype == DType::Bool) c.fail("bool operands are not supported");
    return {broadcastCompute(c, tag, {a, b}, [op](auto& v) { return binary(op, v[0], v[1]); })};
  };
}

/// A constant input holding one value, when it has one element.
bool scalarConstant(const ConvertContext& c, size_t i, double* v) {
  if (!c.isConstant(i) || c.in[i].constant->size() != 1) return false;
  *v = c.in[i].constant->values()[0];
  return true;
}

Outs convertPow(ConvertContext& c) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "the base");
  double e;
  if (scalarConstant(c, 1, &e) && c.x(1)->ndim() <= x->ndim()) {
    auto f = [e](Expr v) -> Expr {
      if (e == 1) return v;
      if (e == 2) return v * v;
      if (e == 3) return v * v * v;
      if (e == 0.5) return ir::sqrt(v);
      if (e == -1) return constLike(v, 1) / v;
      return ir::pow(v, constLike(v, e));
    };
    return {compute(c.name(), "pow", x->shape, [&](auto& ax) { return f(read(x, all(ax))); })};
  }
  DType t = x->dtype;
  return {broadcastCompute(c, "pow", {x, c.x(1)}, [t](auto& v) { return ir::pow(v[0], castTo(v[1], t)); })};
}

Outs convertClip(ConvertContext& c) {
  const Tensor& x = c.x(0);
  std::vector<Tensor> ts{x};
  int loIdx = -1, hiIdx = -1;
  double lo = 0, hi = 0;
  bool loConst = false, hiConst = false;
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!c.has(i)) continue;
    if (c.x(i)->dtype != x->dtype) c.fail("min/max must have the input's type");
    double v = 0;
    bool k = scalarConstant(c, i, &v);
    if (i == 1) { loConst = k; lo = v; } else { hiConst = k; hi = v; }
    if (!k) {
      if (c.x(i)->numElements() != 1) c.fail("min/max must be scalars");
      (i == 1 ? loIdx : hiIdx) = static_cast<int>(ts.size());
      ts.push_back(c.x(i));
    }
  }
  bool hasLo = c.has(1), hasHi = c.has(2);
  return {compute(c.name(), "clip", x->shape, [&](const std::vector<Var>& ax) {
    Expr v = read(x, all(ax));
    auto scalar = [&](int idx) { return read(ts[idx], std::vector<Expr>(ts[idx]->ndim(), intImm(0))); };
    if (hasLo) v = max(v, loConst ? constLike(v, lo) : scalar(loIdx));
    if (hasHi) v = min(v, hiConst ? constLike(v, hi) : scalar(hiIdx));
    return v;
  })};
}

Outs convertWhere(ConvertContext& c) {
  if (c.x(0)->dtype != DType::Bool) c.fail("the condition must be bool");
  if (c.x(1)->dtype != c.x(2)->dtype) c.fail("X and Y types differ");
  return {broadcastCompute(c, "where", {c.x(0), c.x(1), c.x(2)}, [](auto& v) { return select(v[0], v[1], v[2]); })};
}

bool onnxDtype(int64_t code, DType* t) {
  switch (code) {
  case 1: *t = DType::F32; return true;
  case 6: *t = DType::I32; return true;
  case 7: *t = DType::I64; return true;
  case 9: *t = DType::Bool; return true;
  default: return false;
  }
}

Outs convertCast(ConvertContext& c) {
  DType to;
  int64_t code = c.attrInt("to", -1);
  if (!onnxDtype(code, &to)) c.fail("cast to ONNX type " + std::to_string(code) + " is not supported (float32, int32, int64, bool are)");
  const Tensor& x = c.x(0);
  return {compute(c.name(), "cast", x->shape, [&](auto& ax) { return castTo(read(x, all(ax)), to); })};
}

// ---- conv ----

/// Explicit pads from auto_pad / pads for conv and pooling: returns before/after per dim.
void resolvePads(const ConvertContext& c, const Shape& in, const std::vector<int64_t>& kernel,
                 const std::vector<int64_t>& stride, const std::vector<int64_t>& dil,
                 std::vector<int64_t>* before, std::vector<int64_t>* after) {
  size_t n = kernel.size();
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  before->assign(n, 0);
  after->assign(n, 0);
  if (autoPad == "NOTSET") {
    auto pads = c.attrInts("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) c.fail("'pads' needs " + std::to_string(2 * n) + " values");
    for (size_t d = 0; d < n; ++d) {
      (*before)[d] = pads[d];
      (*after)[d] = pads[n + d];
      if (pads[d] < 0 || pads[n + d] < 0) c.fail("negative pads are not supported");
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < n; ++d) {
      int64_t out = (in[d] + stride[d] - 1) / stride[d];
      int64_t total = std::max<int64_t>(0, (out - 1) * stride[d] + (kernel[d] - 1) * dil[d] + 1 - in[d]);
      int64_t small = total / 2, big = total - small;
      (*before)[d] = autoPad == "SAME_UPPER" ? small : big;
      (*after)[d] = autoPad == "SAME_UPPER" ? big : small;
    }
  } else if (autoPad != "VALID") {
    c.fail("auto_pad '" + autoPad + "' is unknown");
  }
}

std::vector<int64_t> spatialAttr(const ConvertContext& c, const std::string& name, size_t n, int64_t def) {
  auto v = c.attrInts(name, std::vector<int64_t>(n, def));
  if (v.size() != n) c.fail("'" + name + "' needs " + std::to_string(n) + " values");
  for (int64_t x : v)
    if (x < 1) c.fail("'" + name + "' values must be positive");
  return v;
}

/// What Conv and ConvTranspose share: input checks, kernel, strides, dilations, groups.
ops::ConvParams convCommon(const ConvertContext& c, std::vector<int64_t>* kernel) {
  const Tensor &x = c.x(0), &w = c.x(1);
  requireFloat(c, x, "X");
  if (x->ndim() < 3 || x->ndim() > 5) c.fail("only 1-3 spatial dimensions are supported");
  if (w->ndim() != x->ndim()) c.fail("W must have X's rank");
  size_t n = x->ndim() - 2;
  kernel->assign(w->shape.begin() + 2, w->shape.end());
  if (c.hasAttr("kernel_shape") && c.attrInts("kernel_shape", {}) != *kernel)
    c.fail("'kernel_shape' does not match W");
  ops::ConvParams p;
  p.stride = spatialAttr(c, "strides", n, 1);
  p.dilation = spatialAttr(c, "dilations", n, 1);
  p.groups = c.attrInt("group", 1);
  return p;
}

Outs convertConv(ConvertContext& c) {
  const Tensor &x = c.x(0), &w = c.x(1);
  std::vector<int64_t> kernel;
  ops::ConvParams p = convCommon(c, &kernel);
  Shape in(x->shape.begin() + 2, x->shape.end());
  resolvePads(c, in, kernel, p.stride, p.dilation, &p.padBefore, &p.padAfter);
  Tensor y = ops::conv(x, w, p, c.name());
  if (c.has(2)) y = ops::biasAdd(y, c.x(2), 1, c.name("bias"));
  return {y};
}

Outs convertConvTranspose(ConvertContext& c) {
  const Tensor &x = c.x(0), &w = c.x(1);
  std::vector<int64_t> kernel;
  ops::ConvParams p = convCommon(c, &kernel);
  size_t n = kernel.size();
  auto outPad = c.attrInts("output_padding", std::vector<int64_t>(n, 0));
  if (outPad.size() != n) c.fail("'output_padding' needs " + std::to_string(n) + " values");
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  p.padBefore.assign(n, 0);
  p.padAfter.assign(n, 0);
  if (c.hasAttr("output_shape") || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    std::vector<int64_t> target = c.attrInts("output_shape", {});
    if (target.size() > n) target.erase(target.begin(), target.begin() + static_cast<long>(target.size() - n));
    for (size_t d = 0; d < n; ++d) {
      int64_t want = target.empty() ? x->shape[2 + d] * p.stride[d] : target[d];
      int64_t full = p.stride[d] * (x->shape[2 + d] - 1) + outPad[d] + (kernel[d] - 1) * p.dilation[d] + 1;
      int64_t total = full - want;
      if (total < 0) c.fail("an output_shape larger than the full output is not supported");
      int64_t half = total / 2;
      p.padBefore[d] = autoPad == "SAME_UPPER" ? half : total - half;
      p.padAfter[d] = autoPad == "SAME_UPPER" ? total - half : half;
    }
  } else if (autoPad == "NOTSET") {
    auto pads = c.attrInts("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) c.fail("'pads' needs " + std::to_string(2 * n) + " values");
    for (size_t d = 0; d < n; ++d) {
      p.padBefore[d] = pads[d];
      p.padAfter[d] = pads[n + d];
    }
  } else if (autoPad != "VALID") {
    c.fail("auto_pad '" + autoPad + "' is unknown");
  }
  Tensor y = ops::convTranspose(x, w, p, outPad, c.name());
  if (c.has(2)) y = ops::biasAdd(y, c.x(2), 1, c.name("bias"));
  return {y};
}

// ---- matrix products ----

Outs convertGemm(ConvertContext& c) {
  const Tensor &a = c.x(0), &b = c.x(1);
  requireFloat(c, a, "A");
  if (a->ndim() != 2 || b->ndim() != 2) c.fail("A and B must be matrices");
  bool ta = c.attrInt("transA", 0) != 0, tb = c.attrInt("transB", 0) != 0;
  double alpha = c.attrFloat("alpha", 1.0), beta = c.attrFloat("beta", 1.0);
  int64_t M = ta ? a->shape[1] : a->shape[0], K = ta ? a->shape[0] : a->shape[1];
  int64_t Kb = tb ? b->shape[1] : b->shape[0], N = tb ? b->shape[0] : b->shape[1];
  if (K != Kb) c.fail("inner dimensions differ (" + std::to_string(K) + " vs " + std::to_string(Kb) + ")");
  Tensor y = reduce(c.name(), tb ? "dense" : "matmul", {M, N}, ReduceKind::Sum, {K},
                    [&](auto& ax, auto& r) {
                      Expr av = ta ? read(a, {r[0], ax[0]}) : read(a, {ax[0], r[0]});
                      Expr bv = tb ? read(b, {ax[1], r[0]}) : read(b, {r[0], ax[1]});
                      return av * bv;
                    },
                    {"i", "j"}, {"k"});
  bool bias = c.has(2) && beta != 0;
  if (alpha != 1 || bias) {
    Shape out{M, N};
    if (bias) ops::broadcastShape(out, c.x(2)->shape, "node '" + c.node.name + "' C");
    y = compute(c.name("epilogue"), "gemm_epilogue", out, [&](const std::vector<Var>& ax) {
      Expr v = read(y, all(ax));
      if (alpha != 1) v = v * alpha;
      if (bias) {
        Expr cv = read(c.x(2), broadcastIndex(c.x(2), out, ax));
        v = v + (beta == 1 ? cv : cv * beta);
      }
      return v;
    });
  }
  return {y};
}

Outs convertMatMul(ConvertContext& c) {
  Tensor a = c.x(0), b = c.x(1);
  requireFloat(c, a, "A");
  if (a->dtype != b->dtype) c.fail("operand types differ");
  Shape sa = a->shape, sb = b->shape;
  bool vecA = sa.size() == 1, vecB = sb.size() == 1;
  if (vecA) sa.insert(sa.begin(), 1);
  if (vecB) sb.push_back(1);
  int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  if (sb[sb.size() - 2] != K) c.fail("inner dimensions differ (" + std::to_string(K) + " vs " + std::to_string(sb[sb.size() - 2]) + ")");
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch = ops::broadcastShape(ba, bb, "node '" + c.node.name + "'");
  Shape out = batch;
  if (!vecA) out.push_back(M);
  if (!vecB) out.push_back(N);
  size_t nb = batch.size();
  auto batchIndex = [&](const Shape& bs, const std::vector<Var>& ax) {
    std::vector<Expr> idx;
    size_t off = nb - bs.size();
    for (size_t d = 0; d < bs.size(); ++d) idx.push_back(bs[d] == 1 && batch[off + d] != 1 ? intImm(0) : Expr(ax[off + d]));
    return idx;
  };
  const char* tag = nb ? "batch_matmul" : "matmul";
  return {reduce(c.name(), tag, out, ReduceKind::Sum, {K}, [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
    Expr i = vecA ? Expr(intImm(0)) : Expr(ax[nb]);
    Expr j = vecB ? Expr(intImm(0)) : Expr(ax[nb + (vecA ? 0 : 1)]);
    std::vector<Expr> ia = batchIndex(ba, ax), ib = batchIndex(bb, ax);
    if (!vecA) ia.push_back(i);
    ia.push_back(r[0]);
    ib.push_back(r[0]);
    if (!vecB) ib.push_back(j);
    return read(a, ia) * read(b, ib);
  })};
}

// ---- normalization ----

Outs convertBatchNorm(ConvertContext& c) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "X");
  if (c.attrInt("training_mode", 0) != 0) c.fail("training_mode=1 is not supported (inference only)");
  for (size_t i = 1; i < c.node.outputs.size(); ++i)
    if (c.wantsOutput(i)) c.fail("the running mean/variance outputs are not supported (inference only)");
  if (x->ndim() < 2) c.fail("X needs a channel dimension");
  int64_t C = x->shape[1];
  for (size_t i = 1; i <= 4; ++i)
    if (c.x(i)->ndim() != 1 || c.x(i)->shape[0] != C) c.fail("scale, B, mean and var must have shape [C]");
  double eps = c.attrFloat("epsilon", 1e-5);
  const Tensor &g = c.x(1), &beta = c.x(2), &mean = c.x(3), &var = c.x(4);
  return {compute(c.name(), "batch_norm", x->shape, [&](const std::vector<Var>& ax) {
    std::vector<Expr> ch{ax[1]};
    Expr v = read(x, all(ax));
    return (v - read(mean, ch)) * (read(g, ch) / ir::sqrt(read(var, ch) + eps)) + read(beta, ch);
  })};
}

Outs convertLayerNorm(ConvertContext& c) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "X");
  size_t axis = static_cast<size_t>(normAxis(c, c.attrInt("axis", -1), x->ndim()));
  double eps = c.attrFloat("epsilon", 1e-5);
  Shape outer(x->shape.begin(), x->shape.begin() + static_cast<long>(axis));
  Shape inner(x->shape.begin() + static_cast<long>(axis), x->shape.end());
  int64_t n = 1;
  for (int64_t d : inner) n *= d;
  const Tensor& scale = c.x(1);
  std::optional<Tensor> bias;
  if (c.has(2)) bias = c.x(2);
  ops::broadcastShape(inner, scale->shape, "node '" + c.node.name + "' Scale");
  auto full = [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
    std::vector<Expr> idx(ax.begin(), ax.end());
    idx.insert(idx.end(), r.begin(), r.end());
    return idx;
  };
  auto outerOf = [&](const std::vector<Var>& ax) {
    return std::vector<Expr>(ax.begin(), ax.begin() + static_cast<long>(axis));
  };
  Tensor sum = reduce(c.name("sum"), "layer_norm_sum", outer, ReduceKind::Sum, inner,
                      [&](auto& ax, auto& r) { return read(x, full(ax, r)); });
  Tensor sq = reduce(c.name("sqsum"), "layer_norm_var", outer, ReduceKind::Sum, inner, [&](auto& ax, auto& r) {
    Expr d = read(x, full(ax, r)) - read(sum, all(ax)) / static_cast<double>(n);
    return d * d;
  });
  Outs outs{compute(c.name(), "layer_norm", x->shape, [&](const std::vector<Var>& ax) {
    std::vector<Var> tail(ax.begin() + static_cast<long>(axis), ax.end());
    std::vector<Expr> o = outerOf(ax);
    Expr v = (read(x, all(ax)) - read(sum, o) / static_cast<double>(n)) *
             ir::rsqrt(read(sq, o) / static_cast<double>(n) + eps);
    v = v * read(scale, broadcastIndex(scale, inner, tail));
    if (bias) v = v + read(*bias, broadcastIndex(*bias, inner, tail));
    return v;
  })};
  // Mean and InvStdDev: the outer shape with the normalized dimensions kept as 1
  Shape kept = outer;
  kept.resize(x->ndim(), 1);
  if (c.wantsOutput(1) || c.wantsOutput(2)) {
    outs.push_back(compute(c.name("mean"), "layer_norm_mean", kept, [&](auto& ax) {
      return read(sum, outerOf(ax)) / static_cast<double>(n);
    }));
    outs.push_back(compute(c.name("inv_std_dev"), "layer_norm_inv_std", kept, [&](auto& ax) {
      return ir::rsqrt(read(sq, outerOf(ax)) / static_cast<double>(n) + eps);
    }));
  }
  return outs;
}

Tensor softmaxLastAxes(const ConvertContext& c, const Tensor& x, size_t axis) {
  // Softmax over the flattened dims [axis, rank) (opsets < 13), via a 2-d reshape.
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < x->ndim(); ++d) (d < axis ? outer : inner) *= x->shape[d];
  Tensor flat = reshapeTensor(x, {outer, inner}, c.name("flat"));
  Tensor s = ops::softmax(flat, 1, c.name("softmax"));
  return reshapeTensor(s, x->shape, c.name());
}

Outs convertSoftmax(ConvertContext& c) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "the input");
  if (x->ndim() == 0) c.fail("scalar input");
  int64_t axis = normAxis(c, c.attrInt("axis", c.opset >= 13 ? -1 : 1), x->ndim());
  if (c.opset >= 13 || axis == static_cast<int64_t>(x->ndim()) - 1)
    return {ops::softmax(x, static_cast<int>(axis), c.name())};
  return {softmaxLastAxes(c, x, static_cast<size_t>(axis))};
}

// ---- reductions ----

Outs reduceCommon(ConvertContext& c, ReduceKind kind, bool mean, std::vector<int64_t> axes, bool axesGiven) {
  const Tensor& x = c.x(0);
  if (kind == ReduceKind::Sum && !isFloat(x->dtype) && x->dtype != DType::I64 && x->dtype != DType::I32)
    c.fail("unsupported input type");
  bool keep = c.attrInt("keepdims", 1) != 0;
  size_t r = x->ndim();
  std::set<size_t> red;
  if (!axesGiven || axes.empty()) {
    if (c.attrInt("noop_with_empty_axes", 0) && axesGiven)
      return {compute(c.name(), "identity", x->shape, [&](auto& ax) { return read(x, all(ax)); })};
    for (size_t d = 0; d < r; ++d) red.insert(d);
  }
  for (int64_t a : axes)
    if (!red.insert(static_cast<size_t>(normAxis(c, a, r))).second) c.fail("repeated axis");
  Shape out, extents;
  for (size_t d = 0; d < r; ++d) {
    if (red.count(d)) {
      extents.push_back(x->shape[d]);
      if (keep) out.push_back(1);
    } else {
      out.push_back(x->shape[d]);
    }
  }
  int64_t count = 1;
  for (int64_t e : extents) count *= e;
  if (extents.empty()) c.fail("nothing to reduce");
  const char* tag = kind == ReduceKind::Sum ? "reduce_sum" : kind == ReduceKind::Max ? "reduce_max" : "reduce_min";
  Tensor y = reduce(mean ? c.name("sum") : c.name(), mean ? "reduce_mean" : tag, out, kind, extents,
                    [&](const std::vector<Var>& ax, const std::vector<Var>& rv) {
                      std::vector<Expr> idx;
                      size_t k = 0, o = 0;
                      for (size_t d = 0; d < r; ++d) {
                        if (red.count(d)) {
                          idx.push_back(rv[k++]);
                          if (keep) ++o;
                        } else {
                          idx.push_back(ax[o++]);
                        }
                      }
                      return read(x, idx);
                    });
  if (mean) {
    requireFloat(c, x, "the input of ReduceMean");
    y = compute(c.name(), "reduce_mean", out, [&](auto& ax) { return read(y, all(ax)) / static_cast<double>(count); });
  }
  return {y};
}

ConvertFn reduceFn(ReduceKind kind, bool mean, bool axesInput) {
  return [=](ConvertContext& c) -> Outs {
    bool fromInput = axesInput && c.opset >= 13;
    if (fromInput) {
      if (c.has(1)) return reduceCommon(c, kind, mean, c.constInts(1, "axes"), true);
      return reduceCommon(c, kind, mean, {}, true);
    }
    if (c.hasAttr("noop_with_empty_axes")) c.fail("attribute 'noop_with_empty_axes' needs opset 13");
    return reduceCommon(c, kind, mean, c.attrInts("axes", {}), c.hasAttr("axes"));
  };
}

// ---- pooling ----

Outs convertPool(ConvertContext& c, bool isMax) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "X");
  if (x->ndim() < 3) c.fail("X needs spatial dimensions");
  if (isMax && c.wantsOutput(1)) c.fail("the Indices output is not supported");
  if (c.attrInt("storage_order", 0) != 0) c.fail("storage_order=1 is not supported");
  size_t n = x->ndim() - 2;
  auto kernel = spatialAttr(c, "kernel_shape", n, 0);
  if (!c.hasAttr("kernel_shape")) c.fail("'kernel_shape' is required");
  auto stride = spatialAttr(c, "strides", n, 1);
  auto dil = spatialAttr(c, "dilations", n, 1);
  bool ceil = c.attrInt("ceil_mode", 0) != 0;
  bool includePad = c.attrInt("count_include_pad", 0) != 0;
  Shape in(x->shape.begin() + 2, x->shape.end());
  std::vector<int64_t> pb, pa;
  resolvePads(c, in, kernel, stride, dil, &pb, &pa);
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  Shape out{x->shape[0], x->shape[1]};
  for (size_t d = 0; d < n; ++d) {
    int64_t eff = (kernel[d] - 1) * dil[d] + 1;
    int64_t num = in[d] + pb[d] + pa[d] - eff;
    if (num < 0) c.fail("the window is larger than the padded input");
    int64_t o;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      o = (in[d] + stride[d] - 1) / stride[d];
    } else {
      o = (ceil ? (num + stride[d] - 1) / stride[d] : num / stride[d]) + 1;
      if (ceil && (o - 1) * stride[d] >= in[d] + pb[d]) --o;
    }
    out.push_back(o);
  }
  Tensor y = reduce(isMax ? c.name() : c.name("sum"), isMax ? "max_pool" : "avg_pool_sum", out,
                    isMax ? ReduceKind::Max : ReduceKind::Sum, kernel,
                    [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
                      std::vector<Expr> idx{ax[0], ax[1]};
                      Expr cond;
                      for (size_t d = 0; d < n; ++d) {
                        Expr i = Expr(ax[2 + d]) * static_cast<double>(stride[d]) +
                                 Expr(r[d]) * static_cast<double>(dil[d]) - static_cast<double>(pb[d]);
                        Expr ok = (i >= 0.0) && (i < static_cast<double>(in[d]));
                        cond = cond.defined() ? (cond && ok) : ok;
                        idx.push_back(i);
                      }
                      Expr v = read(x, idx);
                      double pad = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
                      return select(cond, v, constLike(v, pad));
                    });
  if (isMax) return {y};
  return {compute(c.name(), "avg_pool", out, [&](const std::vector<Var>& ax) {
    Expr count;
    for (size_t d = 0; d < n; ++d) {
      Expr start = Expr(ax[2 + d]) * static_cast<double>(stride[d]) - static_cast<double>(pb[d]);
      Expr end = start + static_cast<double>((kernel[d] - 1) * dil[d] + 1);
      int64_t lo = includePad ? -pb[d] : 0, hi = includePad ? in[d] + pa[d] : in[d];
      Expr len = min(end, intImm(hi)) - max(start, intImm(lo));
      if (dil[d] != 1) c.fail("dilated average pooling is not supported");
      count = count.defined() ? count * len : len;
    }
    return read(y, all(ax)) / cast(x->dtype, count);
  })};
}

Outs convertGlobalPool(ConvertContext& c, bool isMax) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "X");
  if (x->ndim() < 3) c.fail("X needs spatial dimensions");
  Shape out{x->shape[0], x->shape[1]}, extents(x->shape.begin() + 2, x->shape.end());
  int64_t count = 1;
  for (int64_t e : extents) {
    out.push_back(1);
    count *= e;
  }
  Tensor y = reduce(isMax ? c.name() : c.name("sum"), isMax ? "global_max_pool" : "global_avg_pool_sum", out,
                    isMax ? ReduceKind::Max : ReduceKind::Sum, extents,
                    [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
                      std::vector<Expr> idx{ax[0], ax[1]};
                      idx.insert(idx.end(), r.begin(), r.end());
                      return read(x, idx);
                    });
  if (isMax) return {y};
  return {compute(c.name(), "global_avg_pool", out, [&](auto& ax) { return read(y, all(ax)) / static_cast<double>(count); })};
}

// ---- injective ----

Outs convertTranspose(ConvertContext& c) {
  const Tensor& x = c.x(0);
  size_t r = x->ndim();
  std::vector<int64_t> def(r);
  for (size_t i = 0; i < r; ++i) def[i] = static_cast<int64_t>(r - 1 - i);
  auto perm = c.attrInts("perm", def);
  if (perm.size() != r) c.fail("'perm' needs " + std::to_string(r) + " values");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < r; ++i)
    if (sorted[i] != static_cast<int64_t>(i)) c.fail("'perm' is not a permutation");
  Shape out(r);
  for (size_t i = 0; i < r; ++i) out[i] = x->shape[static_cast<size_t>(perm[i])];
  return {compute(c.name(), "transpose", out, [&](const std::vector<Var>& ax) {
    std::vector<Expr> idx(r);
    for (size_t i = 0; i < r; ++i) idx[static_cast<size_t>(perm[i])] = ax[i];
    return read(x, idx);
  })};
}

Outs convertConcat(ConvertContext& c) {
  if (!c.hasAttr("axis")) c.fail("'axis' is required");
  std::vector<Tensor> ts;
  for (size_t i = 0; i < c.numInputs(); ++i)
    if (c.has(i)) ts.push_back(c.x(i));
  if (ts.empty()) c.fail("no inputs");
  size_t r = ts[0]->ndim();
  size_t axis = static_cast<size_t>(normAxis(c, c.attrInt("axis", 0), r));
  Shape out = ts[0]->shape;
  out[axis] = 0;
  std::vector<int64_t> offsets;
  std::vector<Tensor> parts;
  for (auto& t : ts) {
    if (t->ndim() != r || t->dtype != ts[0]->dtype) c.fail("inputs differ in rank or type");
    for (size_t d = 0; d < r; ++d)
      if (d != axis && t->shape[d] != ts[0]->shape[d]) c.fail("inputs differ outside the axis");
    if (t->shape[axis] == 0) continue;
    offsets.push_back(out[axis]);
    parts.push_back(t);
    out[axis] += t->shape[axis];
  }
  return {compute(c.name(), "concat", out, [&](const std::vector<Var>& ax) {
    auto readPart = [&](size_t j) {
      std::vector<Expr> idx = all(ax);
      if (offsets[j]) idx[axis] = ax[axis] - static_cast<double>(offsets[j]);
      return read(parts[j], idx);
    };
    Expr e = readPart(parts.size() - 1);
    for (size_t j = parts.size() - 1; j-- > 0;)
      e = select(Expr(ax[axis]) < static_cast<double>(offsets[j] + parts[j]->shape[axis]), readPart(j), e);
    return e;
  })};
}

Tensor sliceAxis(const ConvertContext& c, const Tensor& x, const std::vector<int64_t>& start,
                 const std::vector<int64_t>& step, const Shape& out, const std::string& name) {
  return compute(name, "slice", out, [&](const std::vector<Var>& ax) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < out.size(); ++d) {
      Expr i = ax[d];
      if (step[d] != 1) i = i * static_cast<double>(step[d]);
      if (start[d] != 0) i = i + static_cast<double>(start[d]);
      idx.push_back(i);
    }
    return read(x, idx);
  });
}

Outs convertSplit(ConvertContext& c) {
  const Tensor& x = c.x(0);
  size_t axis = static_cast<size_t>(normAxis(c, c.attrInt("axis", 0), x->ndim()));
  size_t k = c.node.outputs.size();
  std::vector<int64_t> sizes;
  if (c.opset >= 13) {
    if (c.has(1)) sizes = c.constInts(1, "split");
  } else {
    sizes = c.attrInts("split", {});
  }
  int64_t n = x->shape[axis];
  if (sizes.empty()) {
    if (n % static_cast<int64_t>(k)) c.fail("the axis does not split evenly into " + std::to_string(k) + " outputs");
    sizes.assign(k, n / static_cast<int64_t>(k));
  }
  if (sizes.size() != k) c.fail("'split' has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(k) + " outputs");
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != n) c.fail("'split' sizes do not add up to the axis");
  Outs outs;
  int64_t off = 0;
  for (size_t i = 0; i < k; ++i) {
    std::vector<int64_t> start(x->ndim(), 0), step(x->ndim(), 1);
    start[axis] = off;
    Shape out = x->shape;
    out[axis] = sizes[i];
    if (sizes[i] <= 0) c.fail("empty outputs are not supported");
    outs.push_back(sliceAxis(c, x, start, step, out, c.name(std::to_string(i))));
    off += sizes[i];
  }
  return outs;
}

Outs convertSlice(ConvertContext& c) {
  const Tensor& x = c.x(0);
  size_t r = x->ndim();
  auto starts = c.constInts(1, "starts"), ends = c.constInts(2, "ends");
  if (starts.size() != ends.size()) c.fail("starts and ends differ in length");
  std::vector<int64_t> axes, steps;
  if (c.has(3)) axes = c.constInts(3, "axes");
  else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (c.has(4)) steps = c.constInts(4, "steps");
  else steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) c.fail("axes/steps differ in length from starts");
  std::vector<int64_t> start(r, 0), step(r, 1);
  Shape out = x->shape;
  std::set<size_t> seen;
  const int64_t big = int64_t(1) << 40;
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t a = static_cast<size_t>(normAxis(c, axes[i], r));
    if (!seen.insert(a).second) c.fail("repeated axis");
    int64_t n = x->shape[a], s = steps[i];
    if (s == 0) c.fail("step 0");
    int64_t b = std::clamp(starts[i], -big, big), e = std::clamp(ends[i], -big, big);
    if (b < 0) b += n;
    if (e < 0) e += n;
    int64_t count;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      count = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      count = b > e ? (b - e + (-s) - 1) / (-s) : 0;
    }
    if (count == 0) c.fail("empty outputs are not supported");
    start[a] = b;
    step[a] = s;
    out[a] = count;
  }
  return {sliceAxis(c, x, start, step, out, c.name())};
}

Outs convertPad(ConvertContext& c) {
  const Tensor& x = c.x(0);
  size_t r = x->ndim();
  std::string mode = c.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") c.fail("mode '" + mode + "' is unknown");
  auto pads = c.constInts(1, "pads");
  if (pads.size() != 2 * r) c.fail("'pads' needs " + std::to_string(2 * r) + " values");
  double value = 0;
  std::optional<Tensor> valueTensor; // a constant_value computed at run time
  if (c.has(2)) {
    if (c.x(2)->numElements() != 1) c.fail("constant_value must be a scalar");
    if (c.x(2)->dtype != x->dtype) c.fail("constant_value must have the input's type");
    if (c.isConstant(2)) value = c.constant(2, "constant_value").values()[0];
    else valueTensor = c.x(2);
  }
  Shape out = x->shape;
  for (size_t d = 0; d < r; ++d) {
    out[d] += pads[d] + pads[r + d];
    if (out[d] <= 0) c.fail("empty outputs are not supported");
    if (mode == "reflect" && (pads[d] >= x->shape[d] || pads[r + d] >= x->shape[d]))
      c.fail("reflect pads must be smaller than the dimension");
  }
  return {compute(c.name(), "pad", out, [&](const std::vector<Var>& ax) {
    std::vector<Expr> idx;
    Expr cond;
    for (size_t d = 0; d < r; ++d) {
      int64_t n = x->shape[d], b = pads[d];
      Expr j = b ? Expr(ax[d] - static_cast<double>(b)) : Expr(ax[d]);
      if (b == 0 && pads[r + d] <= 0) { idx.push_back(j); continue; }
      if (mode == "edge") {
        j = min(max(j, intImm(0)), intImm(n - 1));
      } else if (mode == "reflect") {
        j = select(j < 0.0, intImm(0) - j, select(j >= static_cast<double>(n), intImm(2 * (n - 1)) - j, j));
      } else {
        Expr ok = (j >= 0.0) && (j < static_cast<double>(n));
        cond = cond.defined() ? (cond && ok) : ok;
      }
      idx.push_back(j);
    }
    Expr v = read(x, idx);
    if (!cond.defined()) return v;
    Expr fill = valueTensor ? read(*valueTensor, std::vector<Expr>((*valueTensor)->ndim(), intImm(0))) : constLike(v, value);
    return select(cond, v, fill);
  })};
}

Outs convertExpand(ConvertContext& c) {
  const Tensor& x = c.x(0);
  auto shape = c.constInts(1, "shape");
  Shape out = ops::broadcastShape(x->shape, shape, "node '" + c.node.name + "'");
  return {compute(c.name(), "expand", out, [&](auto& ax) { return read(x, broadcastIndex(x, out, ax)); })};
}

Outs convertGather(ConvertContext& c) {
  const Tensor &x = c.x(0), &ind = c.x(1);
  if (!isInt(ind->dtype)) c.fail("indices must be integers");
  size_t axis = static_cast<size_t>(normAxis(c, c.attrInt("axis", 0), x->ndim()));
  int64_t n = x->shape[axis];
  if (c.isConstant(1))
    for (double v : c.in[1].constant->values())
      if (v < -n || v >= n) c.fail("index " + std::to_string(saturateInt(v)) + " is out of range");
  Shape out(x->shape.begin(), x->shape.begin() + static_cast<long>(axis));
  out.insert(out.end(), ind->shape.begin(), ind->shape.end());
  out.insert(out.end(), x->shape.begin() + static_cast<long>(axis) + 1, x->shape.end());
  size_t q = ind->ndim();
  return {compute(c.name(), "gather", out, [&](const std::vector<Var>& ax) {
    std::vector<Expr> ii(ax.begin() + static_cast<long>(axis), ax.begin() + static_cast<long>(axis + q));
    Expr iv = castTo(read(ind, ii), kIndexType);
    iv = select(iv < 0.0, iv + static_cast<double>(n), iv);
    std::vector<Expr> idx(ax.begin(), ax.begin() + static_cast<long>(axis));
    idx.push_back(iv);
    idx.insert(idx.end(), ax.begin() + static_cast<long>(axis + q), ax.end());
    return read(x, idx);
  })};
}

// ---- views ----

Outs convertReshape(ConvertContext& c) {
  const Tensor& x = c.x(0);
  auto shape = c.constInts(1, "shape");
  bool allowZero = c.attrInt("allowzero", 0) != 0;
  Shape out;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == 0 && !allowZero) {
      if (i >= x->ndim()) c.fail("shape copies dimension " + std::to_string(i) + " the input lacks");
      d = x->shape[i];
    }
    if (d == -1) {
      if (infer >= 0) c.fail("more than one -1 in the shape");
      infer = static_cast<int>(i);
      out.push_back(1);
      continue;
    }
    if (d < 0) c.fail("negative dimension in the shape");
    out.push_back(d);
    known *= d;
  }
  int64_t total = x->numElements();
  if (infer >= 0) {
    if (known == 0 || total % known) c.fail("cannot infer the -1 dimension");
    out[static_cast<size_t>(infer)] = total / known;
    known *= out[static_cast<size_t>(infer)];
  }
  if (known != total) c.fail("the shape holds " + std::to_string(known) + " elements, the input " + std::to_string(total));
  return {reshapeTensor(x, out, c.name())};
}

Outs convertFlatten(ConvertContext& c) {
  const Tensor& x = c.x(0);
  int64_t r = static_cast<int64_t>(x->ndim());
  int64_t axis = c.attrInt("axis", 1);
  if (axis < -r || axis > r) c.fail("axis out of range");
  if (axis < 0) axis += r;
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? a : b) *= x->shape[static_cast<size_t>(d)];
  return {reshapeTensor(x, {a, b}, c.name())};
}

std::vector<int64_t> axesOf(ConvertContext& c, bool* given) {
  *given = true;
  if (c.opset >= 13) {
    if (c.has(1)) return c.constInts(1, "axes");
    *given = false;
    return {};
  }
  *given = c.hasAttr("axes");
  return c.attrInts("axes", {});
}

Outs convertSqueeze(ConvertContext& c) {
  const Tensor& x = c.x(0);
  bool given;
  auto axes = axesOf(c, &given);
  std::set<size_t> drop;
  for (int64_t a : axes) {
    size_t d = static_cast<size_t>(normAxis(c, a, x->ndim()));
    if (x->shape[d] != 1) c.fail("cannot squeeze dimension " + std::to_string(d) + " of size " + std::to_string(x->shape[d]));
    drop.insert(d);
  }
  Shape out;
  for (size_t d = 0; d < x->ndim(); ++d)
    if (!(given ? drop.count(d) > 0 : x->shape[d] == 1)) out.push_back(x->shape[d]);
  return {reshapeTensor(x, out, c.name())};
}

Outs convertUnsqueeze(ConvertContext& c) {
  const Tensor& x = c.x(0);
  bool given;
  auto axes = axesOf(c, &given);
  if (!given) c.fail("'axes' is required");
  size_t r = x->ndim() + axes.size();
  std::set<size_t> add;
  for (int64_t a : axes)
    if (!add.insert(static_cast<size_t>(normAxis(c, a, r))).second) c.fail("repeated axis");
  Shape out;
  size_t k = 0;
  for (size_t d = 0; d < r; ++d) out.push_back(add.count(d) ? 1 : x->shape[k++]);
  return {reshapeTensor(x, out, c.name())};
}

Outs convertIdentity(ConvertContext& c) { return {reshapeTensor(c.x(0), c.x(0)->shape, c.name())}; }

Outs convertDropout(ConvertContext& c) {
  if (c.has(2)) {
    const NDArray& t = c.constant(2, "training_mode");
    if (t.size() != 1 || t.values()[0] != 0) c.fail("training_mode=true is not supported (inference only)");
  }
  Outs outs{reshapeTensor(c.x(0), c.x(0)->shape, c.name())};
  if (c.wantsOutput(1)) // inference: nothing is dropped
    outs.push_back(compute(c.name("mask"), "constant", c.x(0)->shape, [](auto&) { return boolImm(true); }));
  return outs;
}

Outs convertConstantOfShape(ConvertContext& c) {
  auto shape = c.constInts(0, "input");
  double v = 0;
  DType t = DType::F32;
  if (c.hasAttr("value")) {
    const Attribute& a = c.node.attrs.at("value");
    if (a.kind != Attribute::Kind::Tensor || a.tensor->size() != 1) c.fail("'value' must be a one-element tensor");
    v = a.tensor->values()[0];
    t = a.tensor->dtype();
  }
  for (int64_t d : shape)
    if (d <= 0) c.fail("empty outputs are not supported");
  return {compute(c.name(), "constant_of_shape", Shape(shape.begin(), shape.end()), [&](auto&) {
    return t == DType::Bool ? boolImm(v != 0) : isFloat(t) ? floatImm(v, t) : intImm(saturateInt(v), t);
  })};
}

Outs noConverter(ConvertContext& c) { c.fail("internal: handled by the program builder"); }

std::vector<OpDef> makeOpDefs() {
  using C = OpClass;
  const std::vector<std::string> none;
  auto pool = [](bool isMax) { return [isMax](ConvertContext& c) { return convertPool(c, isMax); }; };
  auto gpool = [](bool isMax) { return [isMax](ConvertContext& c) { return convertGlobalPool(c, isMax); }; };
  return {
      {"Conv", C::Anchor, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, convertConv},
      {"ConvTranspose", C::Anchor, {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"}, convertConvTranspose},
      {"Gemm", C::Anchor, {"alpha", "beta", "transA", "transB"}, convertGemm},
      {"MatMul", C::Anchor, none, convertMatMul},
      {"BatchNormalization", C::Elementwise, {"epsilon", "momentum", "training_mode"}, convertBatchNorm},
      {"Relu", C::Elementwise, none, unaryFn("relu", [](Expr v) { return max(v, constLike(v, 0)); }, false)},
      {"Clip", C::Elementwise, none, convertClip},
      {"Sigmoid", C::Elementwise, none, unaryFn("sigmoid", [](Expr v) { return ir::sigmoid(v); })},
      {"Tanh", C::Elementwise, none, unaryFn("tanh", [](Expr v) { return ir::tanh(v); })},
      {"Erf", C::Elementwise, none, unaryFn("erf", [](Expr v) { return ir::erf(v); })},
      {"HardSigmoid", C::Elementwise, {"alpha", "beta"}, [](ConvertContext& c) {
         double a = c.attrFloat("alpha", 0.2), b = c.attrFloat("beta", 0.5);
         return unaryFn("hard_sigmoid", [a, b](Expr v) { return max(constLike(v, 0), min(constLike(v, 1), v * a + b)); })(c);
       }},
      {"HardSwish", C::Elementwise, none, unaryFn("hard_swish", [](Expr v) {
         return v * max(constLike(v, 0), min(constLike(v, 1), v * (1.0 / 6.0) + 0.5));
       })},
      {"Add", C::Elementwise, none, binaryFn("add", BinaryOp::Add)},
      {"Sub", C::Elementwise, none, binaryFn("sub", BinaryOp::Sub)},
      {"Mul", C::Elementwise, none, binaryFn("mul", BinaryOp::Mul)},
      {"Div", C::Elementwise, none, binaryFn("div", BinaryOp::Div)},
      {"Pow", C::Elementwise, none, convertPow},
      {"Sqrt", C::Elementwise, none, unaryFn("sqrt", [](Expr v) { return ir::sqrt(v); })},
      {"Reciprocal", C::Elementwise, none, unaryFn("reciprocal", [](Expr v) { return constLike(v, 1) / v; })},
      {"Neg", C::Elementwise, none, unaryFn("neg", [](Expr v) { return constLike(v, 0) - v; }, false)},
      {"Abs", C::Elementwise, none, unaryFn("abs", [](Expr v) { return ir::abs(v); })},
      {"Exp", C::Elementwise, none, unaryFn("exp", [](Expr v) { return ir::exp(v); })},
      {"Log", C::Elementwise, none, unaryFn("log", [](Expr v) { return ir::log(v); })},
      {"Where", C::Elementwise, none, convertWhere},
      {"Cast", C::Elementwise, {"to"}, convertCast},
      {"ReduceMean", C::Reduce, {"axes", "keepdims"}, reduceFn(ReduceKind::Sum, true, false)},
      {"ReduceSum", C::Reduce, {"axes", "keepdims", "noop_with_empty_axes"}, reduceFn(ReduceKind::Sum, false, true)},
      {"ReduceMax", C::Reduce, {"axes", "keepdims"}, reduceFn(ReduceKind::Max, false, false)},
      {"ReduceMin", C::Reduce, {"axes", "keepdims"}, reduceFn(ReduceKind::Min, false, false)},
      {"LayerNormalization", C::Reduce, {"axis", "epsilon", "stash_type"}, convertLayerNorm},
      {"Softmax", C::Reduce, {"axis"}, convertSoftmax},
      {"MaxPool", C::Reduce, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}, pool(true)},
      {"AveragePool", C::Reduce, {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"}, pool(false)},
      {"GlobalAveragePool", C::Reduce, none, gpool(false)},
      {"GlobalMaxPool", C::Reduce, none, gpool(true)},
      {"Pad", C::Injective, {"mode"}, convertPad},
      {"Transpose", C::Injective, {"perm"}, convertTranspose},
      {"Concat", C::Injective, {"axis"}, convertConcat},
      {"Split", C::Injective, {"axis", "split"}, convertSplit},
      {"Slice", C::Injective, none, convertSlice},
      {"Expand", C::Injective, none, convertExpand},
      {"Gather", C::Injective, {"axis"}, convertGather},
      {"Flatten", C::View, {"axis"}, convertFlatten},
      {"Reshape", C::View, {"allowzero"}, convertReshape},
      {"Squeeze", C::View, {"axes"}, convertSqueeze},
      {"Unsqueeze", C::View, {"axes"}, convertUnsqueeze},
      {"Identity", C::View, none, convertIdentity},
      {"Dropout", C::View, {"ratio", "seed"}, convertDropout},
      {"Constant", C::Source, {"value", "value_float", "value_floats", "value_int", "value_ints"}, noConverter},
      {"Shape", C::Source, {"start", "end"}, noConverter},
      {"ConstantOfShape", C::Source, {"value"}, convertConstantOfShape},
  };
}

} // namespace

Tensor reshapeTensor(const Tensor& x, const Shape& shape, const std::string& name) {
  const Shape& in = x->shape;
  return compute(name, "reshape", shape, [&](const std::vector<Var>& ax) {
    // flat index of the output, then unflattened into the input's shape
    Expr flat = intImm(0);
    for (size_t d = 0; d < shape.size(); ++d)
      flat = d == 0 ? Expr(ax[d]) : flat * static_cast<double>(shape[d]) + Expr(ax[d]);
    if (in == shape) return read(x, all(ax));
    std::vector<Expr> idx(in.size());
    int64_t inner = 1;
    for (size_t d = in.size(); d-- > 0;) {
      Expr q = inner == 1 ? flat : flat / intImm(inner);
      idx[d] = d == 0 ? q : q % intImm(in[d]);
      inner *= in[d];
    }
    return read(x, idx);
  });
}

const std::vector<OpDef>& opDefs() {
  static const std::vector<OpDef> defs = makeOpDefs();
  return defs;
}

const OpDef* findOpDef(const std::string& op) {
  for (auto& d : opDefs())
    if (d.op == op) return &d;
  return nullptr;
}

std::vector<Tensor> convertNode(ConvertContext& c) {
  if (!c.node.domain.empty() && c.node.domain != "ai.onnx")
    c.fail("domain '" + c.node.domain + "' is not supported");
  const OpDef* def = findOpDef(c.node.op);
  if (!def) c.fail("op " + c.node.op + " is not supported");
  for (auto& [name, a] : c.node.attrs)
    if (std::find(def->attrs.begin(), def->attrs.end(), name) == def->attrs.end())
      c.fail("attribute '" + name + "' is not supported");
  auto outs = def->convert(c);
  for (auto& t : outs)
    for (int64_t d : t->shape)
      if (d <= 0) c.fail("empty outputs are not supported");
  return outs;
}

} // namespace wm::frontend
