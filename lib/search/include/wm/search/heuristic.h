// A schedule chosen without measurements or a cost model (what a task gets when nothing was
// tuned for it, like TVM's fallback configurations): one of the task's sketches, its tile
// sizes filled by fixed rules for the CPU: the innermost spatial loop tiled by the vector
// width, the loop that the vectorized input does not depend on (the register-reuse axis)
// blocked by a few rows, reductions blocked to stay in the first-level cache, the outer
// spatial tiles left to the parallel loop; then Ansor's parallel, unroll and vectorize rules.
#pragma once

#include <wm/schedule/step_types.h>
#include <wm/search/task.h>

#include <optional>
#include <vector>

namespace wm::search {

/// The heuristic schedule of a CPU task (nullopt on GPU targets, or when no sketch fills).
std::optional<std::vector<sched::Step>> heuristicSchedule(const SearchTask& task);

} // namespace wm::search
