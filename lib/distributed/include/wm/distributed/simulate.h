// Distributed tuning by simulation (docs/distributed.md, "Scaling"): how a run would go with N
// measuring workers, without MPI or a second machine. The real tuner runs on rank 0's side (its
// search and cost model are real, and their time is measured), while the measurements are
// replayed from a real tuning log: a candidate that log measured gets its logged cost and
// build + run time; one it did not gets a cost that is a stable hash of the schedule scaled to
// the task's logged costs, and the median build + run time of the task's logged records. Each
// round of candidates is then scheduled onto N workers as the MPI coordinator does (the next
// candidate to the first free worker), one virtual clock per N, all from the same run: with a
// fixed seed the search is the same whatever N is (cluster.h), so one run times them all.
#pragma once

#include <wm/runtime/measure.h>
#include <wm/search/tuning_log.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wm::distributed {

/// The time `workers` workers take for one round of candidates of these durations, each
/// started on the first free worker (lowest index first) in order, plus `overhead` seconds per
/// candidate (messages, writing the record). workers >= 1.
double roundMakespan(const std::vector<double>& durations, int workers, double overhead);

/// A record's measurement time: build_s + run_s, or, in logs older than run_s, the gap to the
/// previous record of the same task (the sequential tuner writes them back to back); 0 unknown.
std::vector<double> recordDurations(const std::vector<search::TuningRecord>& records);

struct ClusterTimeline {
  int workers = 0;
  double seconds = 0;       ///< virtual wall time of the whole run
  double searchSeconds = 0; ///< of which rank 0 searched (workers idle)
  double busySeconds = 0;   ///< worker-seconds spent measuring
  int trials = 0, rounds = 0;
};

class SimulatedCluster : public runtime::Measurer {
public:
  /// `replay`: the records of a real tuning log; `workers`: the cluster sizes to time.
  SimulatedCluster(const std::vector<search::TuningRecord>& replay, std::vector<int> workers,
                   double overheadSeconds = 0.002);
  std::vector<runtime::MeasureResult>
  measure(const std::vector<runtime::MeasureInput>& inputs) override;
  void measureEach(const std::vector<runtime::MeasureInput>& inputs, const runtime::ResultFn& done,
                   const std::atomic<bool>* stop) override;

  const std::vector<ClusterTimeline>& timelines() const { return lines_; }
  /// Candidates found in the replayed log / not found (costs and times made up as above).
  int replayed() const { return replayed_; }
  int madeUp() const { return madeUp_; }

private:
  struct Logged {
    double cost = 0; ///< 0: failed
    double seconds = 0;
  };
  struct TaskStats {
    double medianSeconds = 0, bestCost = 0;
  };
  using Clock = std::chrono::steady_clock;
  std::map<std::string, Logged> logged_;  ///< workload + steps -> what the log measured
  std::map<std::string, TaskStats> task_; ///< workload -> its logged figures
  double medianSeconds_ = 0.5;
  double overhead_;
  std::vector<ClusterTimeline> lines_;
  Clock::time_point last_;
  int replayed_ = 0, madeUp_ = 0;
};

} // namespace wm::distributed
