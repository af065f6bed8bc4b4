// A search task: one workload (ComputeDAG) on one target, with the hardware parameters the
// sketch rules and annotations read (Ansor's HardwareParams).
#pragma once

#include <wm/ir/compute_dag.h>

#include <string>

namespace wm::search {

enum class TargetKind { Cpu, Gpu };

struct HardwareParams {
  int numCores = 1;
  int vectorBytes = 64;   ///< Ansor's default: a 64-byte vector unit
  int cacheLineBytes = 64;
  int maxThreadsPerBlock = 1024;
  int warpSize = 32;
  int maxVthread = 8;     ///< warp size / 4
  /// This machine's core count, Ansor's CPU defaults otherwise.
  static HardwareParams hostCpu();
  /// A typical NVIDIA GPU's limits.
  static HardwareParams gpuDefault();
};

struct SearchTask {
  ir::ComputeDAG dag;
  std::string key; ///< the workload key (dag.workloadKey())
  TargetKind target = TargetKind::Cpu;
  HardwareParams hw;
  double weight = 1;
  SearchTask(ir::ComputeDAG d, TargetKind t, HardwareParams h)
      : dag(std::move(d)), key(dag.workloadKey()), target(t), hw(h) {}
};

} // namespace wm::search
