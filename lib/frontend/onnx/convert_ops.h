// The ONNX converters and the helpers they share, by file (internal to lib/frontend/onnx; the
// table that lists them is makeOpDefs in convert.cpp).
#pragma once

#include "convert.h"

#include <wm/frontend/ops.h>
#include <wm/ir/tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace wm::frontend::conv {

using Outs = std::vector<ir::Tensor>;
using ops::broadcastIndex;

// ---- convert_common.cpp ----
std::vector<ir::Expr> all(const std::vector<ir::Var>& ax);
/// An ONNX axis (negative counts from the end) as an index; fails naming the node otherwise.
int64_t normAxis(const ConvertContext& c, int64_t axis, size_t rank);
ir::Expr castTo(ir::Expr e, ir::DType t);
ir::Shape broadcastAll(const ConvertContext& c, const std::vector<ir::Tensor>& ts);
/// An n-ary element-wise op with NumPy broadcasting.
ir::Tensor broadcastCompute(const ConvertContext& c, const std::string& tag,
                            const std::vector<ir::Tensor>& ts,
                            const std::function<ir::Expr(const std::vector<ir::Expr>&)>& f);
void requireFloat(const ConvertContext& c, const ir::Tensor& t, const char* what);
/// A converter applying f element-wise (float inputs only unless floatOnly is false).
ConvertFn unaryFn(const std::string& tag, std::function<ir::Expr(ir::Expr)> f,
                  bool floatOnly = true);
ConvertFn binaryFn(const std::string& tag, ir::BinaryOp op);
/// Equal, Greater, Less, ...: a bool tensor of the broadcast shape.
ConvertFn compareFn(const std::string& tag, ir::CompareOp op);
/// A constant input holding one value, when it has one element.
bool scalarConstant(const ConvertContext& c, size_t i, double* v);
/// The 'pads' attribute of n spatial dimensions (non-negative).
void explicitPads(const ConvertContext& c, size_t n, std::vector<int64_t>* before,
                  std::vector<int64_t>* after);
/// Explicit pads from auto_pad / pads for conv and pooling: before/after per spatial dimension.
void resolvePads(const ConvertContext& c, const ir::Shape& in, const std::vector<int64_t>& kernel,
                 const std::vector<int64_t>& stride, const std::vector<int64_t>& dil,
                 std::vector<int64_t>* before, std::vector<int64_t>* after);
/// A per-spatial-dimension attribute (n positive values, def when absent).
std::vector<int64_t> spatialAttr(const ConvertContext& c, const std::string& name, size_t n,
                                 int64_t def);

// ---- convert_elementwise.cpp ----
Outs convertRelu(ConvertContext& c);
Outs convertSigmoid(ConvertContext& c);
Outs convertTanh(ConvertContext& c);
Outs convertClip(ConvertContext& c);
Outs convertPow(ConvertContext& c);
Outs convertWhere(ConvertContext& c);
Outs convertCast(ConvertContext& c);

// ---- convert_nn.cpp ----
Outs convertConv(ConvertContext& c);
Outs convertConvTranspose(ConvertContext& c);
Outs convertGemm(ConvertContext& c);
Outs convertMatMul(ConvertContext& c);

// ---- convert_reduce.cpp ----
Outs convertBatchNorm(ConvertContext& c);
Outs convertLayerNorm(ConvertContext& c);
Outs convertSoftmax(ConvertContext& c);
/// ReduceSum/Mean/Max/Min: axes from the attribute, or (axesInput, opset >= 13) the input.
ConvertFn reduceFn(ir::ReduceKind kind, bool mean, bool axesInput);
Outs convertPool(ConvertContext& c, bool isMax);
Outs convertGlobalPool(ConvertContext& c, bool isMax);

// ---- convert_shape.cpp ----
Outs convertTranspose(ConvertContext& c);
Outs convertConcat(ConvertContext& c);
Outs convertSplit(ConvertContext& c);
Outs convertSlice(ConvertContext& c);
Outs convertPad(ConvertContext& c);
Outs convertExpand(ConvertContext& c);
Outs convertGather(ConvertContext& c);
Outs convertReshape(ConvertContext& c);
Outs convertFlatten(ConvertContext& c);
Outs convertSqueeze(ConvertContext& c);
Outs convertUnsqueeze(ConvertContext& c);
Outs convertIdentity(ConvertContext& c);
Outs convertDropout(ConvertContext& c);
Outs convertConstantOfShape(ConvertContext& c);
/// For ops the program builder folds (Constant, Shape): never called.
Outs noConverter(ConvertContext& c);

} // namespace wm::frontend::conv
