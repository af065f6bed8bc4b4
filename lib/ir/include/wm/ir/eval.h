// Compiles expressions into closures over a slot array of variable values. The reference
// interpreter (DAG level) and the loop-nest interpreter (lowered IR) share it; they differ
// only in how variables, tensor reads and buffer loads are resolved.
#pragma once

#include <wm/ir/expr.h>

#include <functional>

namespace wm::ir {

class ExprCompiler {
public:
  using Fn = std::function<double(const double* slots)>;
  virtual ~ExprCompiler() = default;
  /// Values are computed in double; integer ops use floor semantics, casts round.
  Fn compile(const Expr& e);

protected:
  virtual Fn compileVar(const VarNode* v) = 0;
  /// Default: internal error (tensor reads belong to the DAG level).
  virtual Fn compileTensorRead(const TensorReadNode* n);
  /// Default: internal error (buffer loads belong to the lowered IR).
  virtual Fn compileBufferLoad(const BufferLoadNode* n);

private:
  Fn compileBinary(const BinaryNode* n);
  Fn compileCall(const CallNode* n);
};

/// Rounds a double to what an element of type t can hold.
double roundTo(DType t, double v);

} // namespace wm::ir
