// The tuning loop and task scheduler (see tuner.h).
#include <wm/schedule/steps.h>
#include <wm/search/tuner.h>
#include <wm/support/error.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

namespace wm::search {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

struct TaskState {
  std::unordered_set<std::string> measured;
  std::vector<std::pair<double, std::vector<sched::Step>>> good; // (cost, steps)
  std::vector<double> bestHistory; // best latency after each round
  int trials = 0, errors = 0;
  bool exhausted = false;
  double best() const {
    double b = 0;
    for (auto& g : good) b = b == 0 ? g.first : std::min(b, g.first);
    return b;
  }
};

} // namespace

TuneSummary tune(std::vector<TuneTask>& tasks, const TuneOptions& opts, runtime::Measurer& measurer,
                 costmodel::CostModel& model, TuningLog& log, const std::string& modelName,
                 const std::atomic<bool>* stop, const ProgressFn& progress) {
  auto wall0 = Clock::now();
  TuneSummary sum;
  int nt = static_cast<int>(tasks.size());
  std::vector<TaskState> st(nt);
  std::map<std::string, int> byKey;
  for (int i = 0; i < nt; ++i) byKey[tasks[i].task.key] = i;

  // Resume: what the log already holds for these tasks.
  std::vector<costmodel::MeasuredRecord> warm;
  int total = 0;
  for (auto& r : log.records()) {
    auto it = byKey.find(r.task);
    if (it == byKey.end()) continue;
    auto& t = st[it->second];
    if (!t.measured.insert(r.stepsKey()).second) continue;
    ++t.trials;
    ++total;
    if (r.ok()) t.good.push_back({r.median(), r.steps});
    else ++t.errors;
    warm.push_back({r.task, &tasks[it->second].task.dag, r.steps, r.ok() ? r.median() : 0});
  }
  if (!warm.empty()) model.update(warm);

  std::vector<EvolutionarySearch> searches;
  for (int i = 0; i < nt; ++i) searches.emplace_back(tasks[i].task, opts.evolution, opts.seed * 1000003 + i);
  Rng rng(opts.seed ^ 0x5eed);
  int perRound = std::max(1, std::min(opts.perRound, opts.trials / std::max(1, nt)));

  auto fill = [&] {
    sum.tasks.clear();
    for (int i = 0; i < nt; ++i)
      sum.tasks.push_back({tasks[i].task.key, tasks[i].workload, tasks[i].task.weight, st[i].best(),
                           tasks[i].task.dag.flops(), st[i].trials, st[i].errors});
  };

  auto pickTask = [&]() -> int {
    for (int i = 0; i < nt; ++i)
      if (!st[i].exhausted && st[i].bestHistory.empty()) return i; // warm-up round
    std::vector<int> live;
    for (int i = 0; i < nt; ++i)
      if (!st[i].exhausted) live.push_back(i);
    if (live.empty()) return -1;
    if (opts.strategy == "round-robin") {
      int best = live[0];
      for (int i : live)
        if (st[i].trials < st[best].trials) best = i;
      return best;
    }
    // Ansor's gradient: d(sum w*g)/d(trials) estimated backward from the recent rounds and
    // forward from the attainable rate; the most negative wins, ties at random.
    double bestRate = 0;
    for (int i = 0; i < nt; ++i)
      if (st[i].best() > 0) bestRate = std::max(bestRate, tasks[i].task.dag.flops() / st[i].best());
    std::vector<std::pair<double, int>> grads;
    for (int i : live) {
      double g = st[i].best() > 0 ? st[i].best() : 1e10;
      const auto& h = st[i].bestHistory;
      double backward = 0;
      int w = opts.backwardWindow;
      if (static_cast<int>(h.size()) > w) backward = (h.back() - h[h.size() - 1 - w]) / w;
      double t = std::max(1, st[i].trials);
      double forward = g * (1 - 1.0 / t);
      if (bestRate > 0) forward = std::min(forward, opts.beta * tasks[i].task.dag.flops() / bestRate);
      forward -= g;
      grads.push_back({tasks[i].task.weight * (opts.alpha * backward + (1 - opts.alpha) * forward), i});
    }
    double lo = std::min_element(grads.begin(), grads.end())->first;
    std::vector<int> ties;
    for (auto& [gr, i] : grads)
      if (gr <= lo + 1e-12 * std::abs(lo)) ties.push_back(i);
    return ties[rng.uniformInt(0, static_cast<int64_t>(ties.size()) - 1)];
  };

  int round = 0;
  while (total < opts.trials && !(stop && *stop)) {
    int ti = pickTask();
    if (ti < 0) break;
    auto& t = st[ti];
    int k = std::min(perRound, opts.trials - total);
    std::sort(t.good.begin(), t.good.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<std::vector<sched::Step>> bestSteps;
    for (auto& g : t.good) bestSteps.push_back(g.second);
    auto s0 = Clock::now();
    auto cands = searches[ti].propose(k, model, t.measured, bestSteps);
    if (cands.empty()) cands = searches[ti].propose(k, model, t.measured, bestSteps); // retry once
    sum.searchSeconds += seconds(s0);
    if (cands.empty()) {
      t.exhausted = true;
      t.bestHistory.push_back(t.best());
      continue;
    }
    std::vector<costmodel::MeasuredRecord> fresh;
    for (auto& c : cands) {
      if (stop && *stop) break;
      if (total >= opts.trials) break;
      runtime::MeasureInput in{tasks[ti].workload, c.steps(), ""};
      auto m0 = Clock::now();
      auto res = measurer.measure({in})[0];
      double took = seconds(m0);
      sum.buildSeconds += res.buildSeconds;
      sum.runSeconds += std::max(0.0, took - res.buildSeconds);
      TuningRecord rec;
      rec.task = tasks[ti].task.key;
      rec.workload = tasks[ti].workload;
      rec.steps = c.steps();
      rec.costs = res.error == runtime::MeasureError::None ? res.costs : std::vector<double>{};
      rec.error = runtime::measureErrorName(res.error);
      rec.buildSeconds = res.buildSeconds;
      rec.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      rec.model = modelName;
      rec.seed = opts.seed;
      log.append(rec);
      t.measured.insert(rec.stepsKey());
      ++t.trials;
      ++total;
      if (rec.ok()) t.good.push_back({rec.median(), rec.steps});
      else ++t.errors;
      fresh.push_back({rec.task, &tasks[ti].task.dag, rec.steps, rec.ok() ? rec.median() : 0});
    }
    auto u0 = Clock::now();
    model.update(fresh);
    sum.searchSeconds += seconds(u0);
    t.bestHistory.push_back(t.best());
    ++round;
    fill();
    sum.wallSeconds = seconds(wall0);
    if (progress) progress(sum, ti, round);
  }
  fill();
  sum.interrupted = stop && *stop;
  sum.wallSeconds = seconds(wall0);
  return sum;
}

} // namespace wm::search
