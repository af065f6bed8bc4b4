// The reference interpreter: evaluates a ComputeDAG on given inputs, exactly and slowly.
// It is the oracle of every correctness test. Values are computed in double and rounded to
// each op's element type when stored, so the reference is at least as accurate as any
// schedule of the same program.
#pragma once

#include <wm/ir/compute_dag.h>
#include <wm/ir/eval.h>
#include <wm/support/rng.h>

#include <unordered_map>
#include <vector>

namespace wm::ir {

/// A dense row-major array of values held as double (rounded to dtype on store).
class NDArray {
public:
  NDArray() = default;
  NDArray(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }
  double* data() { return data_.data(); }
  const double* data() const { return data_.data(); }
  std::vector<double>& values() { return data_; }
  const std::vector<double>& values() const { return data_; }
  /// Stores v rounded to the element type.
  void set(int64_t flatIndex, double v);

  /// Uniform values in [lo, hi) (integers: rounded down; bool: 0/1).
  static NDArray random(DType dtype, Shape shape, Rng& rng, double lo = -1.0, double hi = 1.0);

private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::vector<double> data_;
};

/// One random array per placeholder (in dag.placeholders() order), drawn from each
/// placeholder's input range with an Rng seeded by `seed`.
std::vector<NDArray> randomInputs(const ComputeDAG& dag, uint64_t seed);

/// Evaluates every op. `inputs` follow dag.placeholders(); the result has one array per op of
/// dag.ops() (placeholders hold their inputs).
std::vector<NDArray> evaluate(const ComputeDAG& dag, const std::vector<NDArray>& inputs);

/// The arrays of dag.outputs() only.
std::vector<NDArray> evaluateOutputs(const ComputeDAG& dag, const std::vector<NDArray>& inputs);

/// Evaluates an expression without tensor reads, given variable values.
double evaluateScalar(const Expr& e, const std::unordered_map<const VarNode*, double>& vars);

/// Largest |a-b| / max(1, |b|) over all elements (shapes must match); inf if NaN differs.
double maxRelativeError(const NDArray& a, const NDArray& b);

} // namespace wm::ir
