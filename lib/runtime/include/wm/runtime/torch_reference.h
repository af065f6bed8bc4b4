// The libtorch reference executor: runs every node of an ONNX graph (as loaded, before
// folding and fusion) with libtorch's own operators. It is the independent oracle of
// `wmtune run --check` and the baseline of `wmtune run --bench`. libtorch stays inside
// torch_reference.cpp; this header does not include it.
#pragma once

#include <wm/frontend/graph.h>

#include <memory>
#include <string>
#include <vector>

namespace wm::runtime {

class TorchReference {
public:
  /// double: compute in float64 (checking); otherwise float32 (benchmarking).
  TorchReference(const frontend::Graph& graph, bool useDouble, int threads);
  ~TorchReference();
  /// Inputs in graph.inputs order; outputs in graph.outputs order.
  std::vector<ir::NDArray> run(const std::vector<ir::NDArray>& inputs);
  /// Runs again on the inputs of the last run(), outputs discarded (for timing).
  void rerun();
  /// Every ONNX op type the reference runs (its op table).
  static std::vector<std::string> supportedOps();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// libtorch's own operator for a built-in workload spec (the table of torch_reference.cpp): the
/// `libtorch` baseline of `wmtune bench` (float32) and the oracle tests' reference (float64).
class TorchWorkload {
public:
  /// spec: a built-in workload spec. UserError when its operator has no libtorch form here.
  TorchWorkload(const std::string& spec, bool useDouble, int threads);
  ~TorchWorkload();
  /// Inputs in the order of the workload DAG's placeholders; returns the (single) output.
  ir::NDArray run(const std::vector<ir::NDArray>& inputs);
  /// Runs again on the inputs of the last run(), output discarded (for timing).
  void rerun();
  /// Whether the workload operator `op` has a libtorch form.
  static bool supported(const std::string& op);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace wm::runtime
