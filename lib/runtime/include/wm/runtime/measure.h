// Measurement of candidate schedules on the CPU, in worker processes.
//
// A WorkerPool starts the wmtune binary in its worker mode (`wmtune worker`, by exec, never a
// bare fork of the tuner) and keeps it alive across candidates. Each candidate is built and run
// under a timeout; a crash, a hang or a wrong result becomes an error record and the pool goes
// on with a fresh worker. In the worker, a candidate's first run is checked against the task's
// reference result (the unscheduled program, computed once per task); then it is timed: warm-up
// runs, then runs until both a minimum count and a minimum time are reached; the median is
// reported.
#pragma once

#include <wm/schedule/step_types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wm::runtime {

// Ansor's error codes, in its order.
#define WM_MEASURE_ERRORS(X)                                                                       \
  X(None, "none")                                                                                  \
  X(BuildError, "build_error")                                                                     \
  X(RunError, "run_error")                                                                         \
  X(BuildTimeout, "build_timeout")                                                                 \
  X(RunTimeout, "run_timeout")                                                                     \
  X(WrongAnswer, "wrong_answer")                                                                   \
  X(Unknown, "unknown")

enum class MeasureError : uint8_t {
#define WM_X(n, s) n,
  WM_MEASURE_ERRORS(WM_X)
#undef WM_X
};
const char* measureErrorName(MeasureError e);
bool parseMeasureError(const std::string& s, MeasureError* out);

struct MeasureOptions {
  int warmup = 1;              ///< untimed runs after the checked first run
  int minRepeat = 3;           ///< at least this many timed runs
  double minRepeatMs = 100;    ///< and at least this much time in timed runs
  int maxRepeat = 1000;        ///< at most this many
  bool flushCache = false;     ///< overwrite a large buffer before each timed run
  int threads = 0;             ///< kernel threads; 0: all hardware threads
  double buildTimeoutS = 15;
  double runTimeoutS = 10;
  double tolerance = 1e-3;     ///< max relative error against the reference
  /// A candidate whose checked first run takes longer than this is timed by that run alone
  /// (no warm-up or repeats): slow candidates cost one run, not a run timeout.
  double slowRunS = 0.5;
  uint64_t seed = 0;           ///< random inputs
  std::string mcpu, mattr;     ///< CPU target override
  std::string workerExe;       ///< the wmtune binary; empty: this process's executable
};

struct MeasureInput {
  std::string workload;             ///< workload spec
  std::vector<sched::Step> steps;   ///< the schedule
  std::string inject;               ///< test hook: crash, hang, wrong, build_hang
};

struct MeasureResult {
  MeasureError error = MeasureError::Unknown;
  std::string message;
  std::vector<double> costs; ///< seconds per timed run
  double median = 0;         ///< seconds
  double maxError = 0;       ///< of the checked first run
  double buildSeconds = 0;
};

class Measurer {
public:
  virtual ~Measurer() = default;
  virtual std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) = 0;
};

/// Measures in one worker process at a time (the machine's cores are the kernel's).
std::unique_ptr<Measurer> makeWorkerMeasurer(const MeasureOptions& opts);

/// The worker's main loop: reads requests from `in`, writes results to `out` (file
/// descriptors). Used by `wmtune worker`.
int runWorker(int in, int out);

} // namespace wm::runtime
