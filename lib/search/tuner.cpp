// The tuning loop (see tuner.h).
#include <wm/schedule/steps.h>
#include <wm/search/task_scheduler.h>
#include <wm/search/tuner.h>
#include <wm/support/error.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_set>

namespace wm::search {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}

/// A valid measurement: its cost, its steps and their key (stepsToJson, computed once).
struct Good {
  double cost;
  std::vector<sched::Step> steps;
  std::string key;
};

struct TaskState {
  std::unordered_set<std::string> measured, remeasured;
  std::vector<Good> good;
  std::vector<double> bestHistory; // best latency after each round
  int trials = 0, errors = 0;
  bool exhausted = false;
  double best() const {
    double b = 0;
    for (auto& g : good) b = b == 0 ? g.cost : std::min(b, g.cost);
    return b;
  }
  /// What is reported: the best re-measured figure when there is one (bestRecords' rule).
  double reportedBest() const {
    double b = 0;
    for (auto& g : good)
      if (remeasured.count(g.key)) b = b == 0 ? g.cost : std::min(b, g.cost);
    return b > 0 ? b : best();
  }
  /// A re-measurement: the state's figure is replaced (removed when it failed).
  void applyRemeasure(const TuningRecord& r) {
    std::string key = r.stepsKey();
    remeasured.insert(key);
    for (size_t i = 0; i < good.size(); ++i)
      if (good[i].key == key) {
        if (r.ok())
          good[i].cost = r.median();
        else
          good.erase(good.begin() + static_cast<long>(i));
        return;
      }
  }
};

} // namespace

const OptionTable<TuneOptions>& tuneOptionTable() {
  using T = TuneOptions;
  static const OptionTable<T> t = {
      {"trials", "--trials", "Total measurements (the log's records of these tasks count)",
       &T::trials, 1, 1e9},
      {"per_round", "--per-round", "Measurements per round (capped by trials / tasks)",
       &T::perRound, 1, 1e9},
      {"warmup_trials", "--warmup-trials",
       "Measurements of each task's first round (0: --per-round); the task scheduler spends the "
       "rest",
       &T::warmupTrials, 0, 1e9},
      {"strategy", "--strategy", "Task scheduler", &T::strategy, {"gradient", "round-robin"}},
      {"alpha", "--alpha", "Task scheduler: weight of the backward gradient", &T::alpha, 0, 1},
      {"beta", "--beta", "Task scheduler: forward gradient bound factor", &T::beta, 0, 1e9},
      {"backward_window", "--backward-window", "Task scheduler: rounds of the backward gradient",
       &T::backwardWindow, 1, 1e6},
      {"seed", "--seed", "Seed of every random choice", &T::seed},
      {"remeasure_top", "--remeasure-top",
       "Each task's best this-many are measured again before one is reported as best",
       &T::remeasureTop, 0, 1000},
  };
  return t;
}

std::vector<TuneTask> makeTuneTasks(const std::vector<TaskSource>& sources,
                                    const target::Target& target) {
  std::vector<TuneTask> tasks;
  std::map<std::string, size_t> seen;
  for (auto& src : sources) {
    SearchTask t(src.dag, target);
    auto it = seen.find(t.key);
    if (it != seen.end()) { // identical workloads are one task with more weight
      tasks[it->second].task.weight += src.weight;
      continue;
    }
    t.weight = src.weight;
    seen[t.key] = tasks.size();
    tasks.push_back({src.workload, std::move(t)});
  }
  return tasks;
}

TuneSummary tune(std::vector<TuneTask>& tasks, const TuneOptions& opts, runtime::Measurer& measurer,
                 costmodel::CostModel& model, TuningLog& log, const std::string& modelName,
                 const std::atomic<bool>* stop, const ProgressFn& progress) {
  auto wall0 = Clock::now();
  TuneSummary sum;
  int nt = static_cast<int>(tasks.size());
  std::vector<TaskState> st(nt);
  std::map<std::string, int> byKey;
  for (int i = 0; i < nt; ++i) byKey[tasks[i].task.key] = i;

  // Resume: what the log already holds for these tasks on this target.
  std::vector<costmodel::MeasuredRecord> warm;
  int total = 0;
  for (auto& r : log.records()) {
    auto it = byKey.find(r.task);
    if (it == byKey.end() || !target::sameTarget(r.target, tasks[it->second].task.target)) continue;
    auto& t = st[it->second];
    if (r.remeasure) {
      t.applyRemeasure(r);
      continue;
    }
    if (!t.measured.insert(r.stepsKey()).second) continue;
    ++t.trials;
    ++total;
    if (r.ok())
      t.good.push_back({r.median(), r.steps, r.stepsKey()});
    else
      ++t.errors;
    warm.push_back({r.task, &tasks[it->second].task.dag, r.steps, r.ok() ? r.median() : 0});
  }
  if (!warm.empty()) model.update(warm);

  std::vector<EvolutionarySearch> searches;
  for (int i = 0; i < nt; ++i)
    searches.emplace_back(tasks[i].task, opts.evolution, opts.seed * 1000003 + i);
  TaskScheduler scheduler({opts.strategy, opts.alpha, opts.beta, opts.backwardWindow},
                          opts.seed ^ 0x5eed);
  auto scheduleStates = [&] {
    std::vector<TaskScheduleState> ss;
    for (int i = 0; i < nt; ++i)
      ss.push_back({tasks[i].task.weight, tasks[i].task.dag.flops(), st[i].best(), st[i].trials,
                    st[i].bestHistory, st[i].exhausted});
    return ss;
  };
  int perRound = std::max(1, std::min(opts.perRound, opts.trials / std::max(1, nt)));

  auto fill = [&] {
    sum.tasks.clear();
    for (int i = 0; i < nt; ++i)
      sum.tasks.push_back({tasks[i].task.key, tasks[i].workload, tasks[i].task.weight,
                           st[i].reportedBest(), tasks[i].task.dag.flops(), st[i].trials,
                           st[i].errors});
  };

  // Measures states of task ti, appending each record to the log as its result arrives (a
  // distributed measurer finishes them in any order, and a killed run keeps every finished
  // one); returns the records in the order of `states` (absent: not measured, stopped), which
  // is the order the search sees them in, so that the arrival order never changes the search.
  auto measureBatch = [&](int ti, const std::vector<std::vector<sched::Step>>& states,
                          bool remeasure) {
    std::vector<runtime::MeasureInput> inputs;
    for (auto& steps : states) inputs.push_back({tasks[ti].workload, steps, ""});
    std::vector<std::optional<TuningRecord>> out(states.size());
    measurer.measureEach(
        inputs,
        [&](size_t i, const runtime::MeasureResult& res) {
          sum.buildSeconds += res.buildSeconds;
          sum.runSeconds += res.runSeconds;
          TuningRecord rec;
          rec.task = tasks[ti].task.key;
          rec.workload = tasks[ti].workload;
          rec.target = tasks[ti].task.target.key();
          rec.device = tasks[ti].task.target.gpu.device;
          rec.steps = states[i];
          bool ok = res.error == runtime::MeasureError::None;
          rec.costs = ok ? res.costs : std::vector<double>{};
          rec.iqr = ok ? res.iqr : 0;
          rec.error = runtime::measureErrorName(res.error);
          rec.buildSeconds = res.buildSeconds;
          rec.runSeconds = res.runSeconds;
          rec.time =
              std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                  .count();
          rec.model = modelName;
          rec.seed = opts.seed;
          rec.remeasure = remeasure;
          rec.host = res.host;
          rec.rank = res.rank;
          log.append(rec);
          out[i] = std::move(rec);
        },
        stop);
    return out;
  };

  int round = 0;
  while (total < opts.trials && !(stop && *stop)) {
    int ti = scheduler.pick(scheduleStates());
    if (ti < 0) break;
    auto& t = st[ti];
    int k = std::min(perRound, opts.trials - total);
    if (t.bestHistory.empty() && opts.warmupTrials > 0) k = std::min(k, opts.warmupTrials);
    std::sort(t.good.begin(), t.good.end(), [](auto& a, auto& b) { return a.cost < b.cost; });
    std::vector<std::vector<sched::Step>> bestSteps;
    for (auto& g : t.good) bestSteps.push_back(g.steps);
    auto s0 = Clock::now();
    auto cands = searches[ti].propose(k, model, t.measured, bestSteps);
    if (cands.empty()) cands = searches[ti].propose(k, model, t.measured, bestSteps); // retry once
    sum.searchSeconds += seconds(s0);
    if (cands.empty()) {
      t.exhausted = true;
      t.bestHistory.push_back(t.best());
      continue;
    }
    std::vector<std::vector<sched::Step>> states;
    for (auto& c : cands)
      if (static_cast<int>(states.size()) < k) states.push_back(c.steps());
    std::vector<costmodel::MeasuredRecord> fresh;
    for (auto& got : measureBatch(ti, states, false)) {
      if (!got) continue;
      const TuningRecord& rec = *got;
      t.measured.insert(rec.stepsKey());
      ++t.trials;
      ++total;
      if (rec.ok())
        t.good.push_back({rec.median(), rec.steps, rec.stepsKey()});
      else
        ++t.errors;
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
  // Before anything is reported as best: re-measure each task's best few (until the best
  // remeasureTop are all re-measured figures, at most twice that many re-measurements).
  for (int ti = 0; ti < nt && opts.remeasureTop > 0; ++ti) {
    auto& t = st[ti];
    for (int budget = 2 * opts.remeasureTop; budget > 0 && !(stop && *stop);) {
      std::sort(t.good.begin(), t.good.end(), [](auto& a, auto& b) { return a.cost < b.cost; });
      std::vector<std::vector<sched::Step>> todo;
      for (size_t i = 0; i < t.good.size() && static_cast<int>(i) < opts.remeasureTop; ++i)
        if (!t.remeasured.count(t.good[i].key)) todo.push_back(t.good[i].steps);
      if (todo.empty()) break;
      if (static_cast<int>(todo.size()) > budget) todo.resize(static_cast<size_t>(budget));
      budget -= static_cast<int>(todo.size());
      for (auto& got : measureBatch(ti, todo, true))
        if (got) t.applyRemeasure(*got);
    }
  }
  fill();
  sum.interrupted = stop && *stop;
  sum.wallSeconds = seconds(wall0);
  return sum;
}

} // namespace wm::search
