// The tuning loop over several tasks: the task scheduler (task_scheduler.h) picks a task, its
// evolutionary search proposes a batch, the measurer measures it, every record goes to the
// tuning log (with the target's key), and the cost model learns from them. A log that already
// holds records of these tasks on this target is resumed: its states are never measured again
// and count towards the trial budget.
#pragma once

#include <wm/costmodel/cost_model.h>
#include <wm/runtime/measure.h>
#include <wm/search/evolution.h>
#include <wm/search/tuning_log.h>
#include <wm/support/options.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace wm::search {

struct TuneTask {
  std::string workload; ///< canonical spec (what the measurer builds)
  SearchTask task;
};

/// A workload to tune: its spec, DAG and weight (how often the model runs it).
struct TaskSource {
  std::string workload;
  ir::ComputeDAG dag;
  double weight = 1;
};
/// The tasks of the sources on the target; sources with the same workload key are one task
/// whose weight is the sum of theirs. First-appearance order.
std::vector<TuneTask> makeTuneTasks(const std::vector<TaskSource>& sources,
                                    const target::Target& target);

struct TuneOptions {
  int trials = 64;   ///< total measurements over all tasks, records already in the log included
  int perRound = 64; ///< per round, capped by trials / tasks
  /// Measurements of each task's first (warm-up) round, at most perRound; 0: perRound. Small,
  /// the gradient strategy moves the rest of the budget to the tasks that gain most.
  int warmupTrials = 0;
  std::string strategy = "gradient"; ///< or "round-robin"
  double alpha = 0.2;                ///< weight of the backward gradient
  double beta = 2.0;                 ///< forward gradient bound factor
  int backwardWindow = 3;
  uint64_t seed = 0;
  /// Each task's best this-many states are measured again at the end (records with
  /// "remeasure"), and only re-measured figures are reported as best.
  int remeasureTop = 3;
  EvolutionOptions evolution;
};
/// Keys and flags of TuneOptions (the evolution options have their own table).
const OptionTable<TuneOptions>& tuneOptionTable();

struct TaskSummary {
  std::string key, workload;
  double weight = 1;
  double best = 0; ///< seconds; 0 if nothing valid
  int64_t flops = 0;
  int trials = 0, errors = 0;
};

struct TuneSummary {
  std::vector<TaskSummary> tasks;
  double searchSeconds = 0, buildSeconds = 0, runSeconds = 0, wallSeconds = 0;
  bool interrupted = false;
};

using ProgressFn = std::function<void(const TuneSummary& sofar, int task, int round)>;

/// Tunes until the log holds `trials` records of these tasks (on the tasks' target), every
/// state is measured, or *stop becomes true (checked between measurements).
TuneSummary tune(std::vector<TuneTask>& tasks, const TuneOptions& opts, runtime::Measurer& measurer,
                 costmodel::CostModel& model, TuningLog& log, const std::string& modelName,
                 const std::atomic<bool>* stop = nullptr, const ProgressFn& progress = {});

} // namespace wm::search
