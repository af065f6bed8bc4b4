// The default schedule of a task that has no tuned record: what `wmtune run` uses without a
// log. Cheap and always legal: strictly inlineable element-wise stages are inlined, and each
// remaining root stage runs its outer spatial loops (fused) in parallel.
#pragma once

#include <wm/schedule/step_types.h>

namespace wm::ir {
class ComputeDAG;
}

namespace wm::sched {

std::vector<Step> defaultSchedule(const ir::ComputeDAG& dag);

/// The default schedule on a GPU: the same inlining; each root stage's spatial loops fused,
/// split by threadsPerBlock and bound to blockIdx.x / threadIdx.x (a thread computes one output
/// element, its reduction in its own registers).
std::vector<Step> defaultGpuSchedule(const ir::ComputeDAG& dag, int64_t threadsPerBlock = 256);

} // namespace wm::sched
