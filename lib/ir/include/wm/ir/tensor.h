// Tensor-expression IR: operations.
//
// An operation produces one tensor. A placeholder is an input; a compute op defines every
// element of its output as an expression of its spatial axes, optionally reduced (sum, max or
// min) over reduction axes:
//
//     C[i, j] = sum(k < K) A[i, k] * B[k, j]
//
// Operations are immutable, built by placeholder()/compute()/reduce(), which check that the
// body is well typed, uses only the op's own axes, and reads tensors with the right rank.
#pragma once

#include <wm/ir/expr.h>

#include <functional>
#include <string>
#include <vector>

namespace wm::ir {

using Shape = std::vector<int64_t>;

enum class OpKind : uint8_t { Placeholder, Compute };
enum class ReduceKind : uint8_t { None, Sum, Max, Min };
const char* reduceKindName(ReduceKind k);

/// An axis: its variable and its extent (the axis runs over [0, extent)).
struct IterVar {
  Var var;
  int64_t extent = 0;
};

struct OperationNode {
  OpKind kind = OpKind::Placeholder;
  std::string name;
  /// The op family this came from ("conv2d", "pad", ...); informative, not part of the hash.
  std::string tag;
  Shape shape;
  DType dtype = DType::F32;

  // Placeholder only: the range random test inputs are drawn from (e.g. variances > 0).
  double inputLo = -1.0, inputHi = 1.0;

  // Compute only.
  std::vector<IterVar> axes;
  std::vector<IterVar> reduceAxes;
  ReduceKind reduce = ReduceKind::None;
  Expr body;

  bool isPlaceholder() const { return kind == OpKind::Placeholder; }
  bool isCompute() const { return kind == OpKind::Compute; }
  bool hasReduction() const { return reduce != ReduceKind::None; }
  size_t ndim() const { return shape.size(); }
  int64_t numElements() const;
};

/// The identity of a reduction (0 for sum, -inf / +inf for max / min) as a constant of t.
Expr reduceIdentity(ReduceKind k, DType t);

struct PlaceholderOptions {
  double lo = -1.0, hi = 1.0; // range of random test inputs
};
Tensor placeholder(std::string name, Shape shape, DType dtype = DType::F32,
                   PlaceholderOptions opts = {});

using ComputeFn = std::function<Expr(const std::vector<Var>& axes)>;
using ReduceFn =
    std::function<Expr(const std::vector<Var>& axes, const std::vector<Var>& reduceAxes)>;

/// The tag of a stage that only permutes its input's axes between two layouts of one value
/// (a channels-last convolution's output back to NCHW): the sketch rules inline it into its
/// consumers on every target, so that the layout costs no pass of its own.
inline constexpr const char* kLayoutTag = "layout";

/// A compute op without reduction. `axisNames` (optional) names the axes for printing.
Tensor compute(std::string name, std::string tag, Shape shape, const ComputeFn& f,
               std::vector<std::string> axisNames = {});
/// A reduction over axes of the given extents.
Tensor reduce(std::string name, std::string tag, Shape shape, ReduceKind kind, Shape reduceExtents,
              const ReduceFn& f, std::vector<std::string> axisNames = {},
              std::vector<std::string> reduceNames = {});

/// A compute op like `op` (same axes, reduction and type) with another body and name; used by
/// schedule steps that rewrite the DAG (cache read/write). Checked like compute().
Tensor withBody(const OperationNode& op, Expr body, std::string name);

/// Convenience: t(i, j, ...) reads tensor t.
template <typename... Idx> Expr at(const Tensor& t, Idx... idx) {
  return read(t, std::vector<Expr>{Expr(idx)...});
}

} // namespace wm::ir
