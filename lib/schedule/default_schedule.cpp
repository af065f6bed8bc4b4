#include <wm/schedule/default_schedule.h>
#include <wm/schedule/state.h>
#include <wm/schedule/steps.h>

#include <algorithm>

namespace wm::sched {

namespace {
/// Fuse outer spatial loops until the parallel loop has at least this many iterations.
constexpr int64_t kParallelTarget = 64;
} // namespace

namespace {

State inlinedElementwise(const ir::ComputeDAG& dag) {
  State s(dag);
  for (int i = 0; i < s.numStages(); ++i) {
    const StageNode& st = s.stage(i);
    if (st.isPlaceholder() || s.isOutput(i) || st.op->hasReduction()) continue;
    if (!dag.isStrictlyInlineable(dag.indexOf(st.op.get()))) continue;
    State t = s;
    if (applyStep(t, ComputeInlineStep{i}).empty()) s = std::move(t);
  }
  return s;
}

} // namespace

std::vector<Step> defaultGpuSchedule(const ir::ComputeDAG& dag, int64_t threadsPerBlock) {
  State s = inlinedElementwise(dag);
  for (int i = 0; i < s.numStages(); ++i) {
    const StageNode& st = s.stage(i);
    if (st.isPlaceholder() || st.loc != ComputeLoc::Root || st.numSpatialRoot == 0) continue;
    State t = s;
    if (st.numSpatialRoot > 1) {
      std::vector<int> iters;
      for (int k = 0; k < st.numSpatialRoot; ++k) iters.push_back(k);
      if (!applyStep(t, FuseStep{i, iters}).empty()) continue;
    }
    int64_t extent = t.stage(i).leaf(0).extent;
    int64_t threads = std::min(extent, threadsPerBlock);
    if (!applyStep(t, SplitStep{i, 0, extent, {threads}, true}).empty()) continue;
    if (!applyStep(t, AnnotationStep{i, 0, Annotation::BlockX}).empty()) continue;
    if (!applyStep(t, AnnotationStep{i, 1, Annotation::ThreadX}).empty()) continue;
    s = std::move(t);
  }
  return s.steps();
}

std::vector<Step> defaultSchedule(const ir::ComputeDAG& dag) {
  State s = inlinedElementwise(dag);
  for (int i = 0; i < s.numStages(); ++i) {
    const StageNode& st = s.stage(i);
    if (st.isPlaceholder() || st.loc != ComputeLoc::Root) continue;
    int n = 0;
    int64_t extent = 1;
    while (n < st.numSpatialRoot && extent < kParallelTarget) extent *= st.leaf(n++).extent;
    if (extent < 2) continue;
    State t = s;
    if (n > 1) {
      std::vector<int> iters;
      for (int k = 0; k < n; ++k) iters.push_back(k);
      if (!applyStep(t, FuseStep{i, iters}).empty()) continue;
    }
    if (applyStep(t, AnnotationStep{i, 0, Annotation::Parallel}).empty()) s = std::move(t);
  }
  return s.steps();
}

} // namespace wm::sched
