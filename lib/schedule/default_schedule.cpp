#include <wm/schedule/default_schedule.h>
#include <wm/schedule/state.h>
#include <wm/schedule/steps.h>

namespace wm::sched {

namespace {
/// Fuse outer spatial loops until the parallel loop has at least this many iterations.
constexpr int64_t kParallelTarget = 64;
} // namespace

std::vector<Step> defaultSchedule(const ir::ComputeDAG& dag) {
  State s(dag);
  for (int i = 0; i < s.numStages(); ++i) {
    const StageNode& st = s.stage(i);
    if (st.isPlaceholder() || s.isOutput(i) || st.op->hasReduction()) continue;
    if (!dag.isStrictlyInlineable(dag.indexOf(st.op.get()))) continue;
    State t = s;
    if (applyStep(t, ComputeInlineStep{i}).empty()) s = std::move(t);
  }
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
