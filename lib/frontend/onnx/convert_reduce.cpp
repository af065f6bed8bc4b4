// ONNX converters of reductions: BatchNormalization and LayerNormalization (through ops::),
// Softmax, ReduceSum/Mean/Max/Min, MaxPool/AveragePool and the global pools (through ops::pool).
#include "convert_ops.h"

#include <wm/frontend/ops.h>
#include <wm/support/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

namespace wm::frontend::conv {

using namespace wm::ir;

// ---- normalization ----

Outs convertBatchNorm(ConvertContext& c) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "X");
  if (c.attrInt("training_mode", 0) != 0)
    c.fail("training_mode=1 is not supported (inference only)");
  for (size_t i = 1; i < c.node.outputs.size(); ++i)
    if (c.wantsOutput(i))
      c.fail("the running mean/variance outputs are not supported (inference only)");
  if (x->ndim() < 2) c.fail("X needs a channel dimension");
  int64_t C = x->shape[1];
  for (size_t i = 1; i <= 4; ++i)
    if (c.x(i)->ndim() != 1 || c.x(i)->shape[0] != C)
      c.fail("scale, B, mean and var must have shape [C]");
  return {
      ops::batchNorm(x, c.x(1), c.x(2), c.x(3), c.x(4), c.attrFloat("epsilon", 1e-5), c.name())};
}

Outs convertLayerNorm(ConvertContext& c) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "X");
  int axis = static_cast<int>(normAxis(c, c.attrInt("axis", -1), x->ndim()));
  std::optional<Tensor> bias;
  if (c.has(2)) bias = c.x(2);
  bool stats = c.wantsOutput(1) || c.wantsOutput(2);
  auto r = ops::layerNorm(x, axis, c.x(1), bias, c.attrFloat("epsilon", 1e-5), stats, c.name());
  Outs outs{r.y};
  if (stats) {
    outs.push_back(*r.mean);
    outs.push_back(*r.invStdDev);
  }
  return outs;
}

static Tensor softmaxLastAxes(const ConvertContext& c, const Tensor& x, size_t axis) {
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

static Outs reduceCommon(ConvertContext& c, ReduceKind kind, bool mean, std::vector<int64_t> axes,
                         bool axesGiven) {
  const Tensor& x = c.x(0);
  if (kind == ReduceKind::Sum && !isFloat(x->dtype) && x->dtype != DType::I64 &&
      x->dtype != DType::I32)
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
  const char* tag = kind == ReduceKind::Sum   ? "reduce_sum"
                    : kind == ReduceKind::Max ? "reduce_max"
                                              : "reduce_min";
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
    y = compute(c.name(), "reduce_mean", out,
                [&](auto& ax) { return read(y, all(ax)) / static_cast<double>(count); });
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
    if (c.hasAttr("noop_with_empty_axes"))
      c.fail("attribute 'noop_with_empty_axes' needs opset 13");
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
  if (!c.hasAttr("kernel_shape")) c.fail("'kernel_shape' is required");
  ops::PoolParams p;
  p.kernel = spatialAttr(c, "kernel_shape", n, 0);
  p.stride = spatialAttr(c, "strides", n, 1);
  p.dilation = spatialAttr(c, "dilations", n, 1);
  p.ceilMode = c.attrInt("ceil_mode", 0) != 0;
  p.countIncludePad = c.attrInt("count_include_pad", 0) != 0;
  Shape in(x->shape.begin() + 2, x->shape.end());
  resolvePads(c, in, p.kernel, p.stride, p.dilation, &p.padBefore, &p.padAfter);
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
    for (size_t d = 0; d < n; ++d) p.outSize.push_back((in[d] + p.stride[d] - 1) / p.stride[d]);
  return {ops::pool(x, isMax ? ops::PoolKind::Max : ops::PoolKind::Avg, p, c.name())};
}

Outs convertGlobalPool(ConvertContext& c, bool isMax) {
  const Tensor& x = c.x(0);
  requireFloat(c, x, "X");
  if (x->ndim() < 3) c.fail("X needs spatial dimensions");
  return {ops::globalPool(x, isMax ? ops::PoolKind::Max : ops::PoolKind::Avg, c.name())};
}

} // namespace wm::frontend::conv
