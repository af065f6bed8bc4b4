// Sketch generation (Ansor's SketchPolicy): derivation rules walk the stages from the output
// back to the inputs; each rule answers skip / apply and continue / apply and skip the rest,
// and an applied rule yields one or more (state, next stage) pairs. A sketch is a step list
// whose split lengths are still open (0); annotation (annotate.h) fills them in.
//
// The rules are small classes in one ordered list per target (cpuSketchRules / gpuSketchRules
// in sketch.cpp); the order matters (see the comments there).
//
// How to add a sketch rule: docs/contributing.md ("A sketch rule").
#pragma once

#include <wm/schedule/state.h>
#include <wm/search/task.h>

#include <memory>
#include <string>
#include <vector>

namespace wm::search {

struct Sketch {
  std::vector<sched::Step> steps; ///< open split lengths are 0
  sched::State state;             ///< the structure (some extents unknown)
};

enum class RuleResult { Skip, Apply, ApplyAndSkipRest };

class SketchRule {
public:
  virtual ~SketchRule() = default;
  virtual const char* name() const = 0;
  virtual RuleResult meets(const SearchTask& task, const Sketch& s, int stage) const = 0;
  virtual std::vector<std::pair<Sketch, int>> apply(const SearchTask& task, const Sketch& s,
                                                    int stage) const = 0;
};

std::vector<std::unique_ptr<SketchRule>> cpuSketchRules();
std::vector<std::unique_ptr<SketchRule>> gpuSketchRules();

/// Every sketch of the task, in a deterministic order.
std::vector<Sketch> generateSketches(const SearchTask& task);

// ---- analyses of the current state (its DAG after rewrites and inlining) ----
/// Ansor's NeedsMultilevelTiling on stage i of the state.
bool needsMultiLevelTiling(const sched::State& s, int i);
/// Stage i has one effective consumer that reads it element-wise (through inlined stages).
bool hasSingleElementwiseMatchedConsumer(const sched::State& s, int i, int* consumer = nullptr);
/// Product of the spatial and of the reduction extents of stage i.
std::pair<int64_t, int64_t> spaceAndReduceLength(const sched::State& s, int i);

} // namespace wm::search
