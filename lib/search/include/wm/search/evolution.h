// Evolutionary search (Ansor's): a population of random annotations of the task's sketches
// (plus the best measured states and the heuristic schedule), evolved for a few generations by
// weighted mutations with parents drawn in proportion to the cost model's score; the best-scored
// states not yet measured are proposed, with an epsilon share of random ones. Every parameter is in
// EvolutionOptions (flags of `wmtune tune`).
#pragma once

#include <wm/costmodel/cost_model.h>
#include <wm/search/sketch.h>
#include <wm/support/options.h>
#include <wm/support/rng.h>

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace wm::search {

struct EvolutionOptions {
  int population = 2048;
  int generations = 4;
  double mutationProb = 0.85;
  double epsGreedy = 0.05;
  double seedFraction = 0.2; ///< share of the population seeded from the best measured states
  /// "heuristic": the task's heuristic schedule (heuristic.h) is measured first and seeds the
  /// population; "random": the first population is random alone (Ansor's).
  std::string initSchedule = "heuristic";
};
const OptionTable<EvolutionOptions>& evolutionOptionTable();

/// One weighted random mutation (CPU: tile size 0.90, auto-unroll 0.04, compute location
/// 0.05, parallel 0.01; GPU: tile size 0.90, auto-unroll 0.10), or nullopt if it is invalid.
std::optional<sched::State> mutate(const SearchTask& task, const sched::State& s, Rng& rng);

class EvolutionarySearch {
public:
  EvolutionarySearch(const SearchTask& task, EvolutionOptions opts, uint64_t seed);
  /// Up to n states not in `measured` (keys: stepsToJson of the steps).
  std::vector<sched::State> propose(int n, costmodel::CostModel& model,
                                    const std::unordered_set<std::string>& measured,
                                    const std::vector<std::vector<sched::Step>>& bestMeasured);
  const std::vector<Sketch>& sketches() const { return sketches_; }
  /// Whether propose() puts the unmeasured heuristic schedule first whatever its score
  /// (default); when not, it only joins the population.
  void measureHeuristicFirst(bool on) { heuristicFirst_ = on; }

private:
  const SearchTask& task_;
  EvolutionOptions opts_;
  Rng rng_;
  std::vector<Sketch> sketches_;
  std::optional<sched::State> heuristic_; ///< initSchedule "heuristic": its state, if any
  bool heuristicFirst_ = true;
};

/// A schedule for a task nothing was measured of (`wmtune run` without a log record): the best
/// state the cost model scores in an evolutionary search without measurements
/// (opts.population, opts.generations; no random picks), deterministic for a seed; nullopt
/// when no sketch can be annotated.
std::optional<std::vector<sched::Step>> guessSchedule(const SearchTask& task,
                                                      costmodel::CostModel& model,
                                                      EvolutionOptions opts, uint64_t seed);

} // namespace wm::search
