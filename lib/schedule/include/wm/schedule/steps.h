// Applying, replaying, printing and serializing transform steps (data in step_types.h, which
// also holds the "how to add a step" checklist).
//
// A step that does not fit the state (a bad stage or loop position, a compute-at into a
// non-consumer, a split of an annotated loop, ...) is an error value: applyStep returns the
// message and leaves the state as it was. It never crashes and never half-applies.
#pragma once

#include <wm/schedule/state.h>

#include <string>
#include <vector>

namespace wm::sched {

/// Limits on numbers in steps (a schedule is input: a log or a file can hold anything).
inline constexpr int64_t kMaxSplitLength = int64_t(1) << 31;
inline constexpr int64_t kMaxStorageAlign = int64_t(1) << 16;

/// Applies s to state and appends it to the history; "" on success, else the reason.
std::string applyStep(State& state, const Step& s);

struct ReplayResult {
  State state;
  std::string error; ///< empty on success
  int failedStep = -1;
};
/// Applies steps one by one to the initial state of dag.
ReplayResult replay(const ir::ComputeDAG& dag, const std::vector<Step>& steps);

/// Readable one-line form, e.g. `SP(stage 2, iter 0, extent 1024, [8, 8, 4], inner_to_outer)`.
std::string toString(const Step& s);

/// JSON text of a step list: an array of arrays, each starting with the step's tag, e.g.
/// [["SP",2,0,1024,[8,8,4],1],["AN",2,0,"parallel"]]. Unknown lengths are null.
std::string stepsToJson(const std::vector<Step>& steps);
/// Parses stepsToJson's format; on error returns false and sets *error (naming the step).
bool stepsFromJson(const std::string& text, std::vector<Step>* steps, std::string* error);

} // namespace wm::sched
