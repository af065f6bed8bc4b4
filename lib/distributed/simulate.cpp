// Distributed tuning by simulation (see simulate.h).
#include <wm/distributed/simulate.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>
#include <wm/support/hash.h>

#include <algorithm>
#include <map>

namespace wm::distributed {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string stateKey(const std::string& workload, const std::vector<sched::Step>& steps) {
  return workload + "\n" + sched::stepsToJson(steps);
}

} // namespace

double roundMakespan(const std::vector<double>& durations, int workers, double overhead) {
  WM_CHECK(workers >= 1) << "roundMakespan: " << workers << " workers";
  std::vector<double> freeAt(static_cast<size_t>(workers), 0.0);
  double end = 0;
  for (double d : durations) {
    auto w = std::min_element(freeAt.begin(), freeAt.end()); // first free, lowest index on ties
    *w += d + overhead;
    end = std::max(end, *w);
  }
  return end;
}

std::vector<double> recordDurations(const std::vector<search::TuningRecord>& records) {
  std::vector<double> out(records.size(), 0.0);
  std::map<std::string, double> lastTime; // task -> time of its previous record
  for (size_t i = 0; i < records.size(); ++i) {
    auto& r = records[i];
    if (r.runSeconds > 0) {
      out[i] = r.buildSeconds + r.runSeconds;
    } else {
      auto it = lastTime.find(r.task);
      if (it != lastTime.end() && r.time > it->second) out[i] = r.time - it->second;
    }
    lastTime[r.task] = r.time;
  }
  return out;
}

SimulatedCluster::SimulatedCluster(const std::vector<search::TuningRecord>& replay,
                                   std::vector<int> workers, double overheadSeconds)
    : overhead_(overheadSeconds), last_(Clock::now()) {
  auto secs = recordDurations(replay);
  std::map<std::string, std::vector<double>> taskSecs, taskCosts;
  std::vector<double> all;
  for (size_t i = 0; i < replay.size(); ++i) {
    auto& r = replay[i];
    if (r.remeasure) continue;
    logged_[stateKey(r.workload, r.steps)] = {r.ok() ? r.median() : 0.0, secs[i]};
    if (secs[i] > 0) {
      taskSecs[r.workload].push_back(secs[i]);
      all.push_back(secs[i]);
    }
    if (r.ok()) taskCosts[r.workload].push_back(r.median());
  }
  if (!all.empty()) medianSeconds_ = median(all);
  for (auto& [w, v] : taskSecs) task_[w].medianSeconds = median(v);
  for (auto& [w, v] : taskCosts) task_[w].bestCost = *std::min_element(v.begin(), v.end());
  for (int n : workers) {
    WM_CHECK(n >= 1) << "a cluster of " << n << " workers";
    ClusterTimeline t;
    t.workers = n;
    lines_.push_back(t);
  }
}

std::vector<runtime::MeasureResult>
SimulatedCluster::measure(const std::vector<runtime::MeasureInput>& inputs) {
  std::vector<runtime::MeasureResult> out(inputs.size());
  measureEach(
      inputs, [&](size_t i, const runtime::MeasureResult& r) { out[i] = r; }, nullptr);
  return out;
}

void SimulatedCluster::measureEach(const std::vector<runtime::MeasureInput>& inputs,
                                   const runtime::ResultFn& done, const std::atomic<bool>* stop) {
  // Everything since the last round came back was rank 0's work: search and model updates.
  double search = std::chrono::duration<double>(Clock::now() - last_).count();
  std::vector<double> durations;
  std::vector<runtime::MeasureResult> results;
  for (auto& in : inputs) {
    if (stop && *stop) break;
    runtime::MeasureResult r;
    r.error = runtime::MeasureError::None;
    double secs = 0, cost = 0;
    auto it = logged_.find(stateKey(in.workload, in.steps));
    auto ts = task_.find(in.workload);
    if (it != logged_.end()) {
      ++replayed_;
      cost = it->second.cost;
      secs = it->second.seconds;
    } else {
      ++madeUp_;
      uint64_t h =
          StableHasher().addString(in.workload).addString(sched::stepsToJson(in.steps)).value();
      double base = ts != task_.end() && ts->second.bestCost > 0 ? ts->second.bestCost : 1e-3;
      cost = base * (1.0 + 2.0 * static_cast<double>(h % 100003) / 100003.0);
    }
    if (secs <= 0)
      secs = ts != task_.end() && ts->second.medianSeconds > 0 ? ts->second.medianSeconds
                                                               : medianSeconds_;
    if (cost > 0) {
      r.costs = {cost};
      r.median = cost;
    } else {
      r.error = runtime::MeasureError::RunError;
      r.message = "failed in the replayed log";
    }
    r.runSeconds = secs;
    durations.push_back(secs);
    results.push_back(std::move(r));
  }
  for (auto& t : lines_) {
    t.seconds += search + roundMakespan(durations, t.workers, overhead_);
    t.searchSeconds += search;
    for (double d : durations) t.busySeconds += d;
    t.trials += static_cast<int>(durations.size());
    ++t.rounds;
  }
  for (size_t i = 0; i < results.size(); ++i) done(i, results[i]);
  last_ = Clock::now();
}

} // namespace wm::distributed
