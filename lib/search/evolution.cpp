// Evolutionary search and mutations (see evolution.h).
#include <wm/lower/gpu.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/search/evolution.h>
#include <wm/search/heuristic.h>
#include <wm/support/error.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace wm::search {

using namespace wm::sched;

namespace {

/// On a GPU, whether the state's kernels fit the device's launch limits (threads, block and
/// grid dimensions, shared memory): one that does not is a build error, a wasted trial.
bool launchable(const SearchTask& task, const State& s) {
  if (!task.gpu()) return true;
  lower::GpuLaunchLimits limits;
  limits.maxThreadsPerBlock = task.target.gpu.maxThreadsPerBlock;
  limits.sharedBytesPerBlock = task.target.gpu.sharedBytesPerBlock;
  try {
    lower::splitKernels(lower::lower(s), limits);
    return true;
  } catch (const UserError&) {
    return false;
  }
}

std::optional<State> replayed(const SearchTask& task, const std::vector<Step>& steps) {
  auto r = replay(task.dag, steps);
  if (!r.error.empty() || !r.state.concrete()) return std::nullopt;
  return std::move(r.state);
}

template <typename T> std::vector<int> indicesOf(const std::vector<Step>& steps) {
  std::vector<int> out;
  for (size_t i = 0; i < steps.size(); ++i)
    if (std::holds_alternative<T>(steps[i])) out.push_back(static_cast<int>(i));
  return out;
}

// Moves a random factor from one level of a split to another (innermost stays <= 64).
std::optional<State> mutateTileSize(const SearchTask& task, std::vector<Step> steps, Rng& rng) {
  std::vector<int> cands;
  for (int i : indicesOf<SplitStep>(steps)) {
    const auto& sp = std::get<SplitStep>(steps[i]);
    int64_t prod = 1;
    for (int64_t l : sp.lengths) prod *= l;
    if (sp.extent > 1 && prod > 0 && sp.extent % prod == 0) cands.push_back(i);
  }
  if (cands.empty()) return std::nullopt;
  int pick = cands[rng.uniformInt(0, static_cast<int64_t>(cands.size()) - 1)];
  auto& sp = std::get<SplitStep>(steps[pick]);
  int64_t prod = 1;
  for (int64_t l : sp.lengths) prod *= l;
  std::vector<int64_t> parts{sp.extent / prod};
  parts.insert(parts.end(), sp.lengths.begin(), sp.lengths.end());
  std::vector<int> from;
  for (size_t k = 0; k < parts.size(); ++k)
    if (parts[k] > 1) from.push_back(static_cast<int>(k));
  if (from.empty()) return std::nullopt;
  int src = from[rng.uniformInt(0, static_cast<int64_t>(from.size()) - 1)];
  int dst = static_cast<int>(rng.uniformInt(0, static_cast<int64_t>(parts.size()) - 2));
  if (dst >= src) ++dst;
  std::vector<int64_t> divs;
  for (int64_t d = 2; d <= parts[src]; ++d)
    if (parts[src] % d == 0) divs.push_back(d);
  int64_t f = divs[rng.uniformInt(0, static_cast<int64_t>(divs.size()) - 1)];
  parts[src] /= f;
  parts[dst] *= f;
  if (parts.back() > 64) return std::nullopt;
  // A packed weight's block stays the innermost length (packedBlock; the replay of the steps
  // before this one only for a DAG that has such a block).
  if (int64_t old = sp.lengths.back(); parts.back() != old && hasPackedBlock(task.dag)) {
    auto prefix = replay(task.dag, std::vector<Step>(steps.begin(), steps.begin() + pick));
    if (!prefix.error.empty() || splitBlock(prefix.state, sp) == old) return std::nullopt;
  }
  for (size_t k = 0; k < sp.lengths.size(); ++k) sp.lengths[k] = parts[k + 1];
  return replayed(task, steps);
}

std::optional<State> mutateUnroll(const SearchTask& task, std::vector<Step> steps, Rng& rng) {
  auto cands = indicesOf<PragmaStep>(steps);
  if (cands.empty()) return std::nullopt;
  auto& pr =
      std::get<PragmaStep>(steps[cands[rng.uniformInt(0, static_cast<int64_t>(cands.size()) - 1)]]);
  std::vector<int64_t> values{0, 16, 64, 512};
  if (task.gpu()) values.push_back(1024);
  values.erase(std::remove(values.begin(), values.end(), pr.value), values.end());
  pr.value = values[rng.uniformInt(0, static_cast<int64_t>(values.size()) - 1)];
  return replayed(task, steps);
}

std::optional<State> mutateComputeLocation(const SearchTask& task, std::vector<Step> steps,
                                           Rng& rng) {
  auto cands = indicesOf<ComputeAtStep>(steps);
  if (cands.empty()) return std::nullopt;
  int k = cands[rng.uniformInt(0, static_cast<int64_t>(cands.size()) - 1)];
  auto& ca = std::get<ComputeAtStep>(steps[k]);
  auto prefix = replay(task.dag, std::vector<Step>(steps.begin(), steps.begin() + k));
  if (!prefix.error.empty()) return std::nullopt;
  int n = prefix.state.stage(ca.targetStage).numLeaves();
  if (n < 2) return std::nullopt;
  int to = static_cast<int>(rng.uniformInt(0, n - 2));
  ca.targetIter = to >= ca.targetIter ? to + 1 : to;
  return replayed(task, steps);
}

std::optional<State> mutateParallel(const SearchTask& task, std::vector<Step> steps, Rng& rng) {
  std::vector<int> cands;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    auto* fu = std::get_if<FuseStep>(&steps[i]);
    auto* an = std::get_if<AnnotationStep>(&steps[i + 1]);
    if (fu && an && an->annotation == Annotation::Parallel && an->stage == fu->stage &&
        an->iter == 0 && fu->iters.front() == 0)
      cands.push_back(static_cast<int>(i));
  }
  if (cands.empty()) return std::nullopt;
  auto& fu =
      std::get<FuseStep>(steps[cands[rng.uniformInt(0, static_cast<int64_t>(cands.size()) - 1)]]);
  int n = static_cast<int>(fu.iters.size());
  int m = rng.bernoulli(0.5) ? n - 1 : n + 1;
  if (m < 2) return std::nullopt;
  fu.iters.clear();
  for (int i = 0; i < m; ++i) fu.iters.push_back(i);
  return replayed(task, steps);
}

} // namespace

std::optional<State> mutate(const SearchTask& task, const State& s, Rng& rng) {
  double u = rng.uniform01();
  const auto& steps = s.steps();
  if (!task.gpu()) {
    if (u < 0.90) return mutateTileSize(task, steps, rng);
    if (u < 0.94) return mutateUnroll(task, steps, rng);
    if (u < 0.99) return mutateComputeLocation(task, steps, rng);
    return mutateParallel(task, steps, rng);
  }
  // GPU: the cooperative fetching follows the tile sizes, so it is derived anew after a change.
  auto base = withoutCooperativeFetch(s);
  auto m = u < 0.90 ? mutateTileSize(task, base, rng) : mutateUnroll(task, base, rng);
  if (m && !fetchSharedCooperatively(*m)) return std::nullopt;
  return m;
}

const OptionTable<EvolutionOptions>& evolutionOptionTable() {
  using E = EvolutionOptions;
  static const OptionTable<E> t = {
      {"population", "--population", "Evolutionary search population", &E::population, 1, 1e7},
      {"generations", "--generations", "Evolutionary search generations", &E::generations, 0, 1e4},
      {"mutation_prob", "--mutation-prob", "Mutation probability", &E::mutationProb, 0, 1},
      {"eps_greedy", "--eps-greedy", "Share of random picks per round", &E::epsGreedy, 0, 1},
      {"seed_fraction", "--seed-fraction",
       "Share of the population seeded from the best measured states", &E::seedFraction, 0, 1},
      {"init_schedule",
       "--init-schedule",
       "heuristic: measure the task's heuristic schedule first and seed the population with it; "
       "random: a random first population only (as Ansor)",
       &E::initSchedule,
       {"heuristic", "random"}},
  };
  return t;
}

EvolutionarySearch::EvolutionarySearch(const SearchTask& task, EvolutionOptions opts, uint64_t seed)
    : task_(task), opts_(opts), rng_(seed), sketches_(generateSketches(task)) {
  if (opts_.initSchedule == "heuristic")
    if (auto steps = heuristicSchedule(task_)) heuristic_ = replayed(task_, *steps);
}

std::vector<State> EvolutionarySearch::propose(int n, costmodel::CostModel& model,
                                               const std::unordered_set<std::string>& measured,
                                               const std::vector<std::vector<Step>>& bestMeasured) {
  if (n <= 0 || sketches_.empty()) return {};
  std::vector<State> pop;
  std::unordered_set<std::string> inPop;
  auto addTo = [&](std::vector<State>& v, std::unordered_set<std::string>& keys, State s) {
    std::string key = stepsToJson(s.steps());
    if (keys.insert(key).second) v.push_back(std::move(s));
  };
  if (heuristic_) addTo(pop, inPop, *heuristic_);
  int seeds = static_cast<int>(opts_.seedFraction * opts_.population);
  for (size_t i = 0; i < bestMeasured.size() && static_cast<int>(pop.size()) < seeds; ++i)
    if (auto s = replayed(task_, bestMeasured[i])) addTo(pop, inPop, std::move(*s));
  std::vector<State> randomInit;
  std::unordered_set<std::string> randomKeys;
  for (int attempt = 0;
       static_cast<int>(pop.size()) < opts_.population && attempt < 4 * opts_.population;
       ++attempt) {
    const Sketch& sk = sketches_[rng_.uniformInt(0, static_cast<int64_t>(sketches_.size()) - 1)];
    auto s = annotate(task_, sk, rng_);
    if (!s) continue;
    std::string key = stepsToJson(s->steps());
    if (inPop.count(key)) continue;
    inPop.insert(key);
    if (!measured.count(key) && randomKeys.insert(key).second) randomInit.push_back(*s);
    pop.push_back(std::move(*s));
  }
  // best: key -> (score, state) of unmeasured states seen in any generation
  std::map<std::string, std::pair<double, State>> best;
  for (int g = 0; g <= opts_.generations && !pop.empty(); ++g) {
    std::vector<double> scores = model.predict(task_.key, pop);
    for (size_t i = 0; i < pop.size(); ++i) {
      std::string key = stepsToJson(pop[i].steps());
      if (measured.count(key)) continue;
      auto it = best.find(key);
      if (it == best.end() || it->second.first < scores[i])
        best.insert_or_assign(key, std::make_pair(scores[i], pop[i]));
    }
    if (g == opts_.generations) break;
    // Parents in proportion to max(score, 0).
    std::vector<double> cum;
    double total = 0;
    for (double sc : scores)
      cum.push_back(total += std::max(0.0, std::isfinite(sc) ? sc : 0.0) + 1e-12);
    std::vector<State> next;
    std::unordered_set<std::string> nextKeys;
    for (int attempt = 0; static_cast<int>(next.size()) < static_cast<int>(pop.size()) &&
                          attempt < 3 * opts_.population;
         ++attempt) {
      double r = rng_.uniform01() * total;
      size_t p = std::lower_bound(cum.begin(), cum.end(), r) - cum.begin();
      if (p >= pop.size()) p = pop.size() - 1;
      if (rng_.bernoulli(opts_.mutationProb)) {
        if (auto m = mutate(task_, pop[p], rng_)) addTo(next, nextKeys, std::move(*m));
      } else {
        addTo(next, nextKeys, pop[p]);
      }
    }
    if (next.empty()) break;
    pop = std::move(next);
  }
  // The best-scored, then epsilon random picks.
  std::vector<std::pair<double, std::string>> ranked;
  for (auto& [key, v] : best) ranked.push_back({v.first, key});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](auto& a, auto& b) { return a.first > b.first; });
  int nRandom = static_cast<int>(opts_.epsGreedy * n);
  std::vector<State> out;
  std::unordered_set<std::string> chosen;
  // (states over a GPU's launch limits are skipped here, where few are looked at)
  std::unordered_set<std::string> rejected;
  auto take = [&](const std::string& key, const State& s) {
    if (chosen.count(key) || rejected.count(key)) return;
    if (!launchable(task_, s)) {
      rejected.insert(key);
      return;
    }
    chosen.insert(key);
    out.push_back(s);
  };
  if (heuristic_ && heuristicFirst_) { // measured first, whatever the model thinks of it
    std::string key = stepsToJson(heuristic_->steps());
    if (!measured.count(key)) take(key, *heuristic_);
  }
  for (auto& [score, key] : ranked) {
    if (static_cast<int>(out.size()) >= n - nRandom) break;
    take(key, best.at(key).second);
  }
  for (auto& s : randomInit) {
    if (static_cast<int>(out.size()) >= n) break;
    take(stepsToJson(s.steps()), s);
  }
  for (auto& [score, key] : ranked) { // fill up if there were too few random ones
    if (static_cast<int>(out.size()) >= n) break;
    take(key, best.at(key).second);
  }
  return out;
}

std::optional<std::vector<Step>> guessSchedule(const SearchTask& task, costmodel::CostModel& model,
                                               EvolutionOptions opts, uint64_t seed) {
  opts.epsGreedy = 0;
  EvolutionarySearch es(task, opts, seed);
  es.measureHeuristicFirst(false); // the model's pick, among them the heuristic schedule
  auto best = es.propose(1, model, {}, {});
  if (best.empty()) return std::nullopt;
  return best.front().steps();
}

} // namespace wm::search
