// The operator library: functions that build tensor-expression ops, TOPI-style. Each family
// lives in its own file under lib/frontend/ops/. Layouts follow PyTorch/ONNX: NCHW data,
// KCRS conv weights, (C_in, C_out/groups, R, S) transposed-conv weights, row-major matrices.
// Invalid parameters (a group count that does not divide, an empty output) are user errors
// that name the op and the parameter.
//
// How to add an operator: docs/contributing.md ("An operator").
#pragma once

#include <wm/ir/tensor.h>

#include <optional>
#include <string>
#include <vector>

namespace wm::ops {

using ir::Shape;
using ir::Tensor;

// ---- dense.cpp ----
/// C[M, N] = A[M, K] · B[K, N].
Tensor matmul(const Tensor& a, const Tensor& b, const std::string& name = "matmul");
/// Y[M, N] = X[M, K] · W[N, K]ᵀ (the layout of torch.nn.Linear).
Tensor dense(const Tensor& x, const Tensor& w, const std::string& name = "dense");
/// C[B, M, N] = A[B, M, K] · B[B, K, N].
Tensor batchMatmul(const Tensor& a, const Tensor& b, const std::string& name = "batch_matmul");

// ---- conv.cpp ----
/// Per spatial dimension: stride, padding before/after, dilation.
struct ConvParams {
  std::vector<int64_t> stride, padBefore, padAfter, dilation;
  int64_t groups = 1;
  /// The weight is stored channels-last, [C, R..., K] (groups must be 1), as the ONNX loader
  /// repacks a constant conv weight: the convolution is computed into [N, X..., K], output
  /// channels innermost, so that its vector axis reads whole weight vectors, and a layout
  /// stage (ir::kLayoutTag, inlined into its consumers) gives back [N, K, X...].
  bool weightChannelsLast = false;
  /// The weight's rows carry this many unused elements after their C/groups input channels,
  /// [K, C/groups + pad, 1...]: a pointwise convolution only (1 x 1 window, stride 1, no
  /// padding; the ONNX loader pads rows whose length would put a register tile's rows in one
  /// L1 set).
  int64_t weightRowPad = 0;
  /// Same values on every one of `dims` spatial dimensions.
  static ConvParams uniform(size_t dims, int64_t stride, int64_t pad, int64_t dilation,
                            int64_t groups = 1);
};
enum class PadMode { Constant, Reflect, Edge };
/// How pad fills: a constant (or a one-element tensor read at run time), the mirror image
/// without the edge (reflect), or the edge value repeated (edge).
struct PadOptions {
  PadMode mode = PadMode::Constant;
  double value = 0.0;
  std::optional<Tensor> valueTensor;
};
/// Pads every dimension (before/after give one value per dimension of x; negative values crop,
/// reflect pads must be smaller than the dimension).
Tensor pad(const Tensor& x, const Shape& before, const Shape& after, const PadOptions& opts,
           const std::string& name = "pad");
/// Constant padding (non-negative).
Tensor pad(const Tensor& x, const Shape& before, const Shape& after, double value = 0.0,
           const std::string& name = "pad");
/// N-d convolution (1, 2 or 3 spatial dims): data [N, C, X...], weight [K, C/groups, R...].
Tensor conv(const Tensor& data, const Tensor& weight, const ConvParams& p,
            const std::string& name = "conv");
/// N-d transposed convolution: data [N, C, X...], weight [C, K/groups, R...].
Tensor convTranspose(const Tensor& data, const Tensor& weight, const ConvParams& p,
                     const std::vector<int64_t>& outputPadding,
                     const std::string& name = "conv_transpose");

// ---- pool.cpp ----
enum class PoolKind { Max, Avg };
/// Window, stride, dilation and padding per spatial dimension.
struct PoolParams {
  std::vector<int64_t> kernel, stride, dilation, padBefore, padAfter;
  bool ceilMode = false; ///< output sizes round up (a window never starts in the trailing pad)
  bool countIncludePad = true; ///< Avg: divide by the window clipped to the padded input, else
                               ///< by the number of in-bounds elements
  /// Spatial output sizes when given (ONNX's SAME auto-padding); computed otherwise.
  std::vector<int64_t> outSize;
  /// Same window, stride and padding on every one of `dims` dimensions, no dilation.
  static PoolParams uniform(size_t dims, int64_t kernel, int64_t stride, int64_t pad);
};
/// N-d pooling (1-3 spatial dims) over [N, C, X...]; padding reads -inf (max) or 0 (avg).
Tensor pool(const Tensor& x, PoolKind kind, const PoolParams& p, const std::string& name = "pool");
/// Max or average over every spatial dimension of [N, C, X...]: output [N, C, 1...].
Tensor globalPool(const Tensor& x, PoolKind kind, const std::string& name = "global_pool");

// ---- elementwise.cpp ----
Tensor relu(const Tensor& x, const std::string& name = "relu");
/// A bound of clip: none, a constant, or a one-element tensor read at run time.
struct ClipBound {
  std::optional<double> value;
  std::optional<Tensor> tensor;
  bool present() const { return value || tensor; }
};
Tensor clip(const Tensor& x, const ClipBound& lo, const ClipBound& hi,
            const std::string& name = "clip");
Tensor clip(const Tensor& x, double lo, double hi, const std::string& name = "clip");
Tensor sigmoid(const Tensor& x, const std::string& name = "sigmoid");
Tensor tanh(const Tensor& x, const std::string& name = "tanh");
/// x · ½ · (1 + erf(x / √2)).
Tensor gelu(const Tensor& x, const std::string& name = "gelu");
/// NumPy-broadcasting binary op.
Tensor binaryOp(const Tensor& a, const Tensor& b, ir::BinaryOp op, const std::string& name);
Tensor add(const Tensor& a, const Tensor& b, const std::string& name = "add");
Tensor sub(const Tensor& a, const Tensor& b, const std::string& name = "sub");
Tensor mul(const Tensor& a, const Tensor& b, const std::string& name = "mul");
Tensor div(const Tensor& a, const Tensor& b, const std::string& name = "div");
/// x + bias[i_axis] with bias of shape [x.shape[axis]].
Tensor biasAdd(const Tensor& x, const Tensor& bias, int axis, const std::string& name = "bias_add");
/// The index into t of element `ax` of a NumPy broadcast to `out` (dimensions aligned right).
std::vector<ir::Expr> broadcastIndex(const Tensor& t, const Shape& out,
                                     const std::vector<ir::Var>& ax);
/// Broadcast shape of two shapes; user error naming `what` when incompatible.
Shape broadcastShape(const Shape& a, const Shape& b, const std::string& what);

// ---- norm.cpp ----
/// Inference batch norm over axis 1 of [N, C, ...]: (x - mean) · gamma / sqrt(var + eps) + beta.
Tensor batchNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                 const Tensor& var, double eps, const std::string& name = "batch_norm");
/// Softmax along `axis` (max, exp, sum, normalize stages).
Tensor softmax(const Tensor& x, int axis, const std::string& name = "softmax");
/// Layer norm over the dimensions [axis, rank): y, and (when asked) the mean and 1/stddev with
/// the normalized dimensions kept as 1 (ONNX's Mean and InvStdDev outputs).
struct LayerNormResult {
  Tensor y;
  std::optional<Tensor> mean, invStdDev;
};
/// scale (and bias, when given) broadcast to the normalized dimensions.
LayerNormResult layerNorm(const Tensor& x, int axis, const Tensor& scale,
                          const std::optional<Tensor>& bias, double eps, bool stats,
                          const std::string& name = "layer_norm");
/// Layer norm over the last dimension with gamma/beta of that size.
Tensor layerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                 const std::string& name = "layer_norm");
/// 2-norm over every dimension but the first: [B, ...] -> [B] (Ansor's NRM).
Tensor norm2(const Tensor& x, const std::string& name = "norm");

} // namespace wm::ops
