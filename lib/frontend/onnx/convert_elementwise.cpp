// ONNX converters of element-wise ops: activations (through the operator library), Clip, Pow,
// Where, Cast (the table in convert.cpp lists them all).
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
  return {broadcastCompute(c, "pow", {x, c.x(1)},
                           [t](auto& v) { return ir::pow(v[0], castTo(v[1], t)); })};
}

Outs convertClip(ConvertContext& c) {
  const Tensor& x = c.x(0);
  ops::ClipBound lo, hi;
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!c.has(i)) continue;
    ops::ClipBound& b = i == 1 ? lo : hi;
    double v = 0;
    if (scalarConstant(c, i, &v) && c.x(i)->dtype == x->dtype)
      b.value = v;
    else
      b.tensor = c.x(i);
  }
  return {ops::clip(x, lo, hi, c.name())};
}

Outs convertRelu(ConvertContext& c) {
  return {ops::relu(c.x(0), c.name())};
}

Outs convertSigmoid(ConvertContext& c) {
  requireFloat(c, c.x(0), "the input");
  return {ops::sigmoid(c.x(0), c.name())};
}

Outs convertTanh(ConvertContext& c) {
  requireFloat(c, c.x(0), "the input");
  return {ops::tanh(c.x(0), c.name())};
}

Outs convertWhere(ConvertContext& c) {
  if (c.x(0)->dtype != DType::Bool) c.fail("the condition must be bool");
  if (c.x(1)->dtype != c.x(2)->dtype) c.fail("X and Y types differ");
  return {broadcastCompute(c, "where", {c.x(0), c.x(1), c.x(2)},
                           [](auto& v) { return select(v[0], v[1], v[2]); })};
}

static bool onnxDtype(int64_t code, DType* t) {
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
  if (!onnxDtype(code, &to))
    c.fail("cast to ONNX type " + std::to_string(code) +
           " is not supported (float32, int32, int64, bool are)");
  const Tensor& x = c.x(0);
  return {
      compute(c.name(), "cast", x->shape, [&](auto& ax) { return castTo(read(x, all(ax)), to); })};
}

} // namespace wm::frontend::conv
