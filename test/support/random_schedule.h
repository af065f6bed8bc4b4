// Seeded random schedules for property and fuzz tests: sequences of transform steps with
// random arguments (splits with non-dividing factors, fuses, reorders, compute locations,
// cache reads/writes, rfactor, annotations, pragmas, storage alignment, follow splits). Each
// candidate step is applied to the state; illegal ones are rejected by applyStep and skipped,
// so every returned sequence replays cleanly.
#pragma once

#include <wm/lower/stmt.h>
#include <wm/schedule/steps.h>
#include <wm/support/rng.h>

#include <string>
#include <vector>

namespace wm::testing {

/// The steps, and (if `state` is given) the state they built, one step at a time.
std::vector<sched::Step> randomSchedule(const ir::ComputeDAG& dag, Rng& rng, int maxSteps = 14,
                                        sched::State* state = nullptr);

/// Stores the loop nest executes (sum over stores of the product of enclosing loop extents);
/// tests skip random schedules whose nests are too large to interpret quickly.
/// Whether a loop of the nest is bound to a GPU thread axis (the CPU code generator refuses
/// those; GPU schedules are checked by the loop interpreter).
bool hasThreadBinding(const lower::Stmt& s);
/// Statements the nest runs; threadLoopsOnce: one thread's (a thread-bound loop is its index).
double loopWork(const lower::Stmt& s, bool threadLoopsOnce = false);

/// Two small shapes of every built-in workload (specs), for tests that run every operator.
std::vector<std::string> smallWorkloads();

} // namespace wm::testing
