// Helpers the ONNX converters share (see convert_ops.h).
#include "convert_ops.h"

#include <wm/frontend/ops.h>
#include <wm/support/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace wm::frontend::conv {

using namespace wm::ir;

std::vector<Expr> all(const std::vector<Var>& ax) {
  return {ax.begin(), ax.end()};
}

int64_t normAxis(const ConvertContext& c, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

Expr castTo(Expr e, DType t) {
  return e.dtype() == t ? e : cast(t, std::move(e));
}

Shape broadcastAll(const ConvertContext& c, const std::vector<Tensor>& ts) {
  Shape out;
  for (auto& t : ts) out = ops::broadcastShape(out, t->shape, "node '" + c.node.name + "'");
  return out;
}

/// An n-ary element-wise op with NumPy broadcasting.
Tensor broadcastCompute(const ConvertContext& c, const std::string& tag,
                        const std::vector<Tensor>& ts,
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

ConvertFn unaryFn(const std::string& tag, std::function<Expr(Expr)> f, bool floatOnly) {
  return [tag, f, floatOnly](ConvertContext& c) -> Outs {
    const Tensor& x = c.x(0);
    if (floatOnly) requireFloat(c, x, "the input");
    return {compute(c.name(), tag, x->shape, [&](auto& ax) { return f(read(x, all(ax))); })};
  };
}

namespace {

void requireSameType(ConvertContext& c, const Tensor& a, const Tensor& b) {
  if (a->dtype != b->dtype)
    c.fail(std::string("operand types differ (") + dtypeName(a->dtype) + " vs " +
           dtypeName(b->dtype) + ")");
}

} // namespace

ConvertFn binaryFn(const std::string& tag, BinaryOp op) {
  return [tag, op](ConvertContext& c) -> Outs {
    const Tensor &a = c.x(0), &b = c.x(1);
    requireSameType(c, a, b);
    if (a->dtype == DType::Bool) c.fail("bool operands are not supported");
    return {broadcastCompute(c, tag, {a, b}, [op](auto& v) { return binary(op, v[0], v[1]); })};
  };
}

ConvertFn compareFn(const std::string& tag, CompareOp op) {
  return [tag, op](ConvertContext& c) -> Outs {
    const Tensor &a = c.x(0), &b = c.x(1);
    requireSameType(c, a, b);
    return {broadcastCompute(c, tag, {a, b}, [op](auto& v) { return compare(op, v[0], v[1]); })};
  };
}

/// A constant input holding one value, when it has one element.
bool scalarConstant(const ConvertContext& c, size_t i, double* v) {
  if (!c.isConstant(i) || c.in[i].constant->size() != 1) return false;
  *v = c.in[i].constant->values()[0];
  return true;
}

void explicitPads(const ConvertContext& c, size_t n, std::vector<int64_t>* before,
                  std::vector<int64_t>* after) {
  auto pads = c.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.size() != 2 * n) c.fail("'pads' needs " + std::to_string(2 * n) + " values");
  before->assign(n, 0);
  after->assign(n, 0);
  for (size_t d = 0; d < n; ++d) {
    (*before)[d] = pads[d];
    (*after)[d] = pads[n + d];
    if (pads[d] < 0 || pads[n + d] < 0) c.fail("negative pads are not supported");
  }
}

void resolvePads(const ConvertContext& c, const Shape& in, const std::vector<int64_t>& kernel,
                 const std::vector<int64_t>& stride, const std::vector<int64_t>& dil,
                 std::vector<int64_t>* before, std::vector<int64_t>* after) {
  size_t n = kernel.size();
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  before->assign(n, 0);
  after->assign(n, 0);
  if (autoPad == "NOTSET") {
    explicitPads(c, n, before, after);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < n; ++d) {
      int64_t out = (in[d] + stride[d] - 1) / stride[d];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * stride[d] + (kernel[d] - 1) * dil[d] + 1 - in[d]);
      int64_t small = total / 2, big = total - small;
      (*before)[d] = autoPad == "SAME_UPPER" ? small : big;
      (*after)[d] = autoPad == "SAME_UPPER" ? big : small;
    }
  } else if (autoPad != "VALID") {
    c.fail("auto_pad '" + autoPad + "' is unknown");
  }
}

std::vector<int64_t> spatialAttr(const ConvertContext& c, const std::string& name, size_t n,
                                 int64_t def) {
  auto v = c.attrInts(name, std::vector<int64_t>(n, def));
  if (v.size() != n) c.fail("'" + name + "' needs " + std::to_string(n) + " values");
  for (int64_t x : v)
    if (x < 1) c.fail("'" + name + "' values must be positive");
  return v;
}

} // namespace wm::frontend::conv
