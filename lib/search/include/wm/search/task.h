// A search task: one workload (ComputeDAG) on one target. The sketch rules and annotations read
// the target's parameters (cores; on GPUs the thread limits, warp size and vthreads), as
// Ansor's rules read its HardwareParams.
#pragma once

#include <wm/ir/compute_dag.h>
#include <wm/target/target.h>

#include <string>

namespace wm::search {

struct SearchTask {
  ir::ComputeDAG dag;
  std::string key; ///< the workload key (dag.workloadKey())
  target::Target target;
  double weight = 1;
  SearchTask(ir::ComputeDAG d, target::Target t)
      : dag(std::move(d)), key(dag.workloadKey()), target(std::move(t)) {}
  bool gpu() const { return target.isGpu(); }
};

} // namespace wm::search
