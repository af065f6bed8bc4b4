// Distributed tuning over MPI (docs/distributed.md). Rank 0 owns the search, the cost model,
// the task scheduler and the log; ranks 1..N-1 are workers that
//  - in measure mode build and measure the candidates rank 0 sends them (each free worker takes
//    the next candidate of the round), or
//  - in task mode tune whole tasks on their own machine (each free worker takes the next task),
//    sending every record back as it is written.
// Rank 0 writes every record to the one log as it arrives, naming the rank and host that
// measured it; a killed job resumes from that log like a single-process run.
#pragma once

#include <wm/distributed/mpi.h>
#include <wm/runtime/measure.h>
#include <wm/search/tuner.h>
#include <wm/search/tuning_log.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wm::distributed {

struct WorkerInfo {
  int rank = 0;
  std::string host;
  std::string target; ///< its Target::key()
};

/// Task mode: tune task `task` (its index in the tasks every rank derives from the same command
/// line, `key` to check it) up to `trials` records, resuming from `records` (the task's records
/// of rank 0's log).
struct TaskJob {
  int task = 0;
  std::string key;
  int trials = 0;
  std::vector<search::TuningRecord> records;
};

/// What a worker reports when a job is done.
struct JobReport {
  int task = 0, rank = 0;
  std::string host;
  double searchSeconds = 0, buildSeconds = 0, runSeconds = 0, wallSeconds = 0;
};

/// Rank 0. Construction waits for every worker's hello (its host and target); destruction, an
/// error's included, waits for the measurements in flight and tells every worker to stop (a
/// worker in the middle of a task-mode job cannot be waited for: then the job is aborted, and
/// the log, complete up to there, resumes it).
class Coordinator {
public:
  explicit Coordinator(Mpi& mpi);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  const std::vector<WorkerInfo>& workers() const { return workers_; }
  /// Measure mode: a Measurer whose candidates the workers measure, the next one going to the
  /// first free worker (lowest rank first); results carry the rank and host.
  std::unique_ptr<runtime::Measurer> measurer();
  /// Task mode: runs the jobs on the workers, the next job going to the first free worker;
  /// every record they send is appended to `log` with its rank and host as it arrives, and
  /// `done` hears of each finished job.
  void runJobs(const std::vector<TaskJob>& jobs, search::TuningLog& log,
               const std::function<void(const JobReport&)>& done);

  /// (the measurer's side)
  void measureEach(const std::vector<runtime::MeasureInput>& inputs, const runtime::ResultFn& done,
                   const std::atomic<bool>* stop);

private:
  Mpi& mpi_;
  std::vector<WorkerInfo> workers_;
  std::vector<int> busy_; ///< per rank: 0 free, 1 measuring, 2 running a job
};

/// A worker's task-mode tuner: tunes the job with this log (in memory: its appends go to rank 0).
using JobFn = std::function<search::TuneSummary(const TaskJob& job, search::TuningLog& log)>;

/// Ranks 1..N-1: says hello (host, target key), then measures candidates with `local` and runs
/// jobs with `job` as rank 0 asks, until it says stop.
void serve(Mpi& mpi, const std::string& targetKey, runtime::Measurer& local, const JobFn& job);

// The messages, as JSON text (exposed for the tests).
std::string encodeMeasure(int64_t id, const runtime::MeasureInput& in);
bool decodeMeasure(const std::string& text, int64_t* id, runtime::MeasureInput* in);
std::string encodeResult(int64_t id, const runtime::MeasureResult& r);
bool decodeResult(const std::string& text, int64_t* id, runtime::MeasureResult* r);

} // namespace wm::distributed
