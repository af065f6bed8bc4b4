// Whole-model execution: every fused group of a model runs its task's compiled kernel (the
// best schedule a tuning log holds for the task, or the default schedule), in order, on
// planned buffers: constants are loaded once, views share their source's bytes, and an
// intermediate buffer is reused once its last reader has run. Kernels are compiled for the
// target and run with its cores.
#pragma once

#include <wm/frontend/model.h>
#include <wm/runtime/measure.h>
#include <wm/schedule/step_types.h>
#include <wm/target/target.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wm::runtime {

struct ExecutorStats {
  int kernels = 0;            ///< distinct compiled kernels (one per task)
  int tunedKernels = 0;       ///< of which from a tuning log
  int64_t bufferBytes = 0;    ///< planned intermediate memory
  int64_t unplannedBytes = 0; ///< what one buffer per value would take
  double compileSeconds = 0;
};

class GraphExecutor {
public:
  /// `schedules`: task key -> steps (tasks without an entry get the default schedule).
  GraphExecutor(const frontend::Program& program, const frontend::ModelPlan& plan,
                const std::map<std::string, std::vector<sched::Step>>& schedules,
                const target::Target& target);
  ~GraphExecutor();
  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  /// Inputs in program.inputs order (shapes and types checked); outputs in program.outputs order.
  std::vector<ir::NDArray> run(const std::vector<ir::NDArray>& inputs);
  /// Runs on the inputs of the last run() again, without copying in or out (for timing).
  void runKernels();
  /// Each fused group's kernel timed alone on the buffers of the last run(), the way the whole
  /// model and measurements are timed (timing.h): seconds per group, in execution order.
  std::vector<double> profileKernels(const MeasureOptions& timing);
  const ExecutorStats& stats() const;

private:
  /// Runs every group's kernel in order; afterGroup (when set) sees each group's index.
  void runGroups(const std::function<void(size_t)>& afterGroup);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace wm::runtime
