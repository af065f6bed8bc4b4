// ONNX converters of data movement: injective ops (Transpose, Concat, Split, Slice, Pad through
// ops::pad, Expand, Gather), views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) and
// sources (ConstantOfShape; Constant and Shape are folded by the program builder).
#include "convert_ops.h"

#include <wm/frontend/ops.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

namespace wm::frontend::conv {

using namespace wm::ir;

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
      e = select(Expr(ax[axis]) < static_cast<double>(offsets[j] + parts[j]->shape[axis]),
                 readPart(j), e);
    return e;
  })};
}

static Tensor sliceAxis(const ConvertContext& c, const Tensor& x, const std::vector<int64_t>& start,
                        const std::vector<int64_t>& step, const Shape& out,
                        const std::string& name) {
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
    if (n % static_cast<int64_t>(k))
      c.fail("the axis does not split evenly into " + std::to_string(k) + " outputs");
    sizes.assign(k, n / static_cast<int64_t>(k));
  }
  if (sizes.size() != k)
    c.fail("'split' has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(k) +
           " outputs");
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != n)
    c.fail("'split' sizes do not add up to the axis");
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
  if (c.has(3))
    axes = c.constInts(3, "axes");
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (c.has(4))
    steps = c.constInts(4, "steps");
  else
    steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("axes/steps differ in length from starts");
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
  ops::PadOptions o;
  if (mode == "reflect")
    o.mode = ops::PadMode::Reflect;
  else if (mode == "edge")
    o.mode = ops::PadMode::Edge;
  else if (mode != "constant")
    c.fail("mode '" + mode + "' is unknown");
  auto pads = c.constInts(1, "pads");
  if (pads.size() != 2 * r) c.fail("'pads' needs " + std::to_string(2 * r) + " values");
  if (c.has(2)) {
    if (c.x(2)->numElements() != 1) c.fail("constant_value must be a scalar");
    if (c.x(2)->dtype != x->dtype) c.fail("constant_value must have the input's type");
    if (c.isConstant(2))
      o.value = c.constant(2, "constant_value").values()[0];
    else
      o.valueTensor = c.x(2); // a constant_value computed at run time
  }
  Shape before(pads.begin(), pads.begin() + static_cast<long>(r)),
      after(pads.begin() + static_cast<long>(r), pads.end());
  for (size_t d = 0; d < r; ++d)
    if (x->shape[d] + before[d] + after[d] <= 0) c.fail("empty outputs are not supported");
  return {ops::pad(x, before, after, o, c.name())};
}

Outs convertExpand(ConvertContext& c) {
  const Tensor& x = c.x(0);
  auto shape = c.constInts(1, "shape");
  Shape out = ops::broadcastShape(x->shape, shape, "node '" + c.node.name + "'");
  return {compute(c.name(), "expand", out,
                  [&](auto& ax) { return read(x, broadcastIndex(x, out, ax)); })};
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
    std::vector<Expr> ii(ax.begin() + static_cast<long>(axis),
                         ax.begin() + static_cast<long>(axis + q));
    Expr iv = castTo(read(ind, ii), kIndexType);
    iv = select(iv < 0.0, iv + static_cast<double>(n), iv);
    // Indices known only at run time are clamped: a bad one reads a wrong element, never
    // outside the buffer (the executor reports it: frontend::indexRanges).
    if (!c.isConstant(1)) iv = min(max(iv, constLike(iv, 0)), constLike(iv, double(n - 1)));
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
      if (i >= x->ndim())
        c.fail("shape copies dimension " + std::to_string(i) + " the input lacks");
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
    if (!checkedMul(known, d, &known) || known > kMaxTensorElements)
      c.fail("the shape has more elements than any tensor");
  }
  int64_t total = x->numElements();
  if (infer >= 0) {
    if (known == 0 || total % known) c.fail("cannot infer the -1 dimension");
    out[static_cast<size_t>(infer)] = total / known;
    known *= out[static_cast<size_t>(infer)];
  }
  if (known != total)
    c.fail("the shape holds " + std::to_string(known) + " elements, the input " +
           std::to_string(total));
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

static std::vector<int64_t> axesOf(ConvertContext& c, bool* given) {
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
    if (x->shape[d] != 1)
      c.fail("cannot squeeze dimension " + std::to_string(d) + " of size " +
             std::to_string(x->shape[d]));
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

Outs convertIdentity(ConvertContext& c) {
  return {reshapeTensor(c.x(0), c.x(0)->shape, c.name())};
}

Outs convertDropout(ConvertContext& c) {
  if (c.has(2)) {
    const NDArray& t = c.constant(2, "training_mode");
    if (t.size() != 1 || t.values()[0] != 0)
      c.fail("training_mode=true is not supported (inference only)");
  }
  Outs outs{reshapeTensor(c.x(0), c.x(0)->shape, c.name())};
  if (c.wantsOutput(1)) // inference: nothing is dropped
    outs.push_back(
        compute(c.name("mask"), "constant", c.x(0)->shape, [](auto&) { return boolImm(true); }));
  return outs;
}

Outs convertConstantOfShape(ConvertContext& c) {
  auto shape = c.constInts(0, "input");
  double v = 0;
  DType t = DType::F32;
  if (c.hasAttr("value")) {
    const Attribute& a = c.node.attrs.at("value");
    if (a.kind != Attribute::Kind::Tensor || a.tensor->size() != 1)
      c.fail("'value' must be a one-element tensor");
    v = a.tensor->values()[0];
    t = a.tensor->dtype();
  }
  for (int64_t d : shape)
    if (d <= 0) c.fail("empty outputs are not supported");
  return {compute(c.name(), "constant_of_shape", Shape(shape.begin(), shape.end()), [&](auto&) {
    return t == DType::Bool ? boolImm(v != 0)
           : isFloat(t)     ? floatImm(v, t)
                            : intImm(saturateInt(v), t);
  })};
}

Outs noConverter(ConvertContext& c) {
  c.fail("internal: handled by the program builder");
}

} // namespace wm::frontend::conv
