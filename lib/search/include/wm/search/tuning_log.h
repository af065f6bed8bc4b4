// The tuning log: one JSON object per line, append-only, one write() per record, so a run can
// be killed at any point (kill -9 included) and resumed without losing or repeating a
// finished measurement. Format (docs/tuning-log.md):
//   {"v":1,"task":KEY,"workload":SPEC,"target":"llvm -mcpu=znver4 -num-cores=2","steps":[...],
//    "costs":[...],"median_s":..,"iqr_s":..,"error":"none","build_s":..,"time":UNIX_SECONDS,
//    "run_s":..,"model":"random","seed":S[,"remeasure":true][,"host":H,"rank":R]}
// A truncated last line (a killed write) is skipped with a warning; any other unreadable line
// is a user error naming the file and line. Reading never writes: only a log opened for
// appending (the tuner) drops a truncated last line from the file.
#pragma once

#include <wm/costmodel/cost_model.h>
#include <wm/ir/compute_dag.h>
#include <wm/schedule/step_types.h>
#include <wm/target/target.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace wm::search {

struct TuningRecord {
  int version = 1;
  std::string task;            ///< workload key
  std::string workload;        ///< canonical spec
  std::string target = "llvm"; ///< Target::key() of the machine it was measured on
  std::string device;          ///< a GPU's name (cuda records; empty otherwise)
  std::vector<sched::Step> steps;
  std::vector<double> costs; ///< seconds per call, one per timing sample; empty on error
  double iqr = 0;            ///< interquartile range of the samples (seconds)
  std::string error = "none";
  double buildSeconds = 0;
  double runSeconds = 0; ///< wall time of the check and timing runs (0 in older logs)
  double time = 0;
  std::string model;
  uint64_t seed = 0;
  /// A re-measurement of a state measured before (the tuner re-measures each task's best few
  /// before reporting them): its figure replaces the earlier one; it is not a new trial.
  bool remeasure = false;
  /// Where a distributed run measured it (docs/distributed.md): the host and MPI rank; empty and
  /// -1 for a single-process run (then not stored).
  std::string host;
  int rank = -1;
  /// Where it was read from: its line in the log file (0: not read from a file; not stored).
  int line = 0;

  bool ok() const { return error == "none" && !costs.empty(); }
  double median() const;
  /// The steps as JSON text (the identity of a measured state).
  std::string stepsKey() const;
};

class TuningLog {
public:
  enum class Mode { Read, Append };
  /// Reads the log at path. Read: the file must exist and is never opened for writing.
  /// Append: created if missing; a truncated last line is cut off the file before appending.
  TuningLog(std::string path, Mode mode);
  /// A log in memory, without a file: it starts with `records`, and every append is handed to
  /// `sink` when there is one (a task-mode rank of distributed tuning sends its records to rank
  /// 0 that way).
  TuningLog(std::vector<TuningRecord> records, std::function<void(const TuningRecord&)> sink);
  ~TuningLog();
  TuningLog(const TuningLog&) = delete;
  TuningLog& operator=(const TuningLog&) = delete;

  const std::vector<TuningRecord>& records() const { return records_; }
  /// Appends and flushes one record (Append mode or a log in memory).
  void append(const TuningRecord& r);
  const std::string& path() const { return path_; }

  static std::string toLine(const TuningRecord& r);
  /// Parses one line; false (and *error) if it is not a record.
  static bool fromLine(const std::string& line, TuningRecord* r, std::string* error);

private:
  std::string path_;
  int fd_ = -1;
  std::vector<TuningRecord> records_;
  bool memory_ = false;
  std::function<void(const TuningRecord&)> sink_;
};

/// The best (lowest median) valid record of each task measured on target t; a state's latest
/// re-measurement replaces its earlier figures (a failed one removes the state), and when a
/// task has re-measured states, only those can be best. Records of other targets are never
/// best (they are counted in *otherTargets when given).
std::map<std::string, const TuningRecord*> bestRecords(const std::vector<TuningRecord>& records,
                                                       const target::Target& t,
                                                       int* otherTargets = nullptr);

/// The records of tuning logs grouped by task, with each task's DAG (`resolve` maps a workload
/// spec to its DAG); a task whose workload cannot be resolved (a model file that moved) is
/// skipped with a warning. Tasks in order of first appearance.
struct LoggedTask {
  std::string key, workload;
  ir::ComputeDAG dag;
  std::vector<TuningRecord> records;
};
using WorkloadResolver = std::function<ir::ComputeDAG(const std::string& spec)>;
std::vector<LoggedTask> readLoggedTasks(const std::vector<std::string>& paths,
                                        const WorkloadResolver& resolve);
/// As cost-model training records (failed measurements have cost 0); DAGs point into `tasks`.
std::vector<costmodel::MeasuredRecord> measuredRecords(const std::vector<LoggedTask>& tasks);

} // namespace wm::search
