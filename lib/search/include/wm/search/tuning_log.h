// The tuning log: one JSON object per line, append-only, one write() per record, so a run can
// be killed at any point (kill -9 included) and resumed without losing or repeating a
// finished measurement. Format (docs/tuning-log.md):
//   {"v":1,"task":KEY,"workload":SPEC,"target":"llvm","steps":[...],"costs":[...],
//    "error":"none","build_s":..,"time":UNIX_SECONDS,"model":"random","seed":S}
// A truncated last line (a killed write) is dropped with a warning; any other unreadable
// line is a user error naming the file and line.
#pragma once

#include <wm/schedule/step_types.h>

#include <string>
#include <vector>

namespace wm::search {

struct TuningRecord {
  int version = 1;
  std::string task;     ///< workload key
  std::string workload; ///< canonical spec
  std::string target = "llvm";
  std::vector<sched::Step> steps;
  std::vector<double> costs; ///< seconds; empty on error
  std::string error = "none";
  double buildSeconds = 0;
  double time = 0;
  std::string model;
  uint64_t seed = 0;

  bool ok() const { return error == "none" && !costs.empty(); }
  double median() const;
  /// The steps as JSON text (the identity of a measured state).
  std::string stepsKey() const;
};

class TuningLog {
public:
  /// Opens (creating if needed) and reads the log at path.
  explicit TuningLog(std::string path);
  ~TuningLog();
  TuningLog(const TuningLog&) = delete;
  TuningLog& operator=(const TuningLog&) = delete;

  const std::vector<TuningRecord>& records() const { return records_; }
  /// Appends and flushes one record.
  void append(const TuningRecord& r);
  const std::string& path() const { return path_; }

  static std::string toLine(const TuningRecord& r);
  /// Parses one line; false (and *error) if it is not a record.
  static bool fromLine(const std::string& line, TuningRecord* r, std::string* error);

private:
  std::string path_;
  int fd_ = -1;
  std::vector<TuningRecord> records_;
};

} // namespace wm::search
