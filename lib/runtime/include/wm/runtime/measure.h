// The measurement API that search sees: what to measure (MeasureInput), how (MeasureOptions,
// one option table), what came out (MeasureResult with Ansor's error codes), and the Measurer
// interface. The implementation search gets is makeWorkerMeasurer: it starts the wmtune binary
// in its worker mode (`wmtune worker`, by exec, never a bare fork of the tuner), keeps it alive
// across candidates, and puts each candidate's build and run under a timeout; a crash, a hang
// or a wrong result becomes an error record and the pool goes on with a fresh worker.
//
// The worker belongs to the app (apps/wmtune/cmd_worker.cpp): it resolves the workload spec,
// builds the candidate with a ProgramBuilder and checks and times it with a ProgramRunner
// (program.h). No LLVM, ONNX or protobuf is linked through this header's library.
#pragma once

#include <wm/schedule/step_types.h>
#include <wm/support/options.h>
#include <wm/target/target.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wm::runtime {

namespace cuda {
struct DeviceInfo;
}

/// The cuda target of this machine's first GPU: its SM version (unless opts.arch forces one),
/// thread, shared-memory and register limits, warp size, SM count and clock, read through the
/// driver (cuda_driver.h); UserError saying why when there is no usable device (no
/// libcuda.so.1, no device, driver too old). *info, when given, receives the device's report.
target::Target cudaTarget(const target::TargetOptions& opts, cuda::DeviceInfo* info = nullptr);

// Ansor's error codes: build_error is its instantiation/compile-host error (the schedule does
// not replay, lower or fit the launch limits), compile_device the GPU driver's rejection of the
// PTX (its JIT log is the message), runtime_device a kernel fault on the GPU (the worker that saw
// it is replaced: its context is poisoned).
#define WM_MEASURE_ERRORS(X)                                                                       \
  X(None, "none")                                                                                  \
  X(BuildError, "build_error")                                                                     \
  X(CompileDevice, "compile_device")                                                               \
  X(RunError, "run_error")                                                                         \
  X(RuntimeDevice, "runtime_device")                                                               \
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

/// How candidates are checked and timed. Defaults live here and nowhere else; the rows of
/// measureOptionTable() give keys, flags and help.
struct MeasureOptions {
  int warmup = 1;          ///< untimed runs after the checked first run (then until stable)
  int repeat = 5;          ///< samples (timing.h)
  double minRepeatMs = 20; ///< each sample lasts at least this long (`number` calls)
  double maxSpread = 0.1;  ///< IQR / median above which the samples are taken again
  int retries = 2;         ///< at most this many times
  bool flushCache = false; ///< overwrite a large buffer before each sample (one call each)
  bool pinThreads = true;  ///< pin kernel threads to cores while timing (rt/parallel.cpp says why)
  double buildTimeoutS = 15;
  double runTimeoutS = 10;
  double tolerance = 1e-3; ///< max relative error against the reference
  /// A candidate whose checked first run takes longer than this is timed by that run alone
  /// (no warm-up or repeats): slow candidates cost one run, not a run timeout.
  double slowRunS = 0.5;
  uint64_t inputSeed = 0; ///< random inputs
};
const OptionTable<MeasureOptions>& measureOptionTable();

struct MeasureInput {
  std::string workload;           ///< workload spec (the worker resolves it)
  std::vector<sched::Step> steps; ///< the schedule
  std::string inject;             ///< test hook: crash, hang, wrong, build_hang
};

struct MeasureResult {
  MeasureError error = MeasureError::Unknown;
  std::string message;
  std::vector<double> costs; ///< seconds per call, one per sample
  double median = 0;         ///< seconds per call
  double iqr = 0;            ///< interquartile range of the samples (seconds)
  int number = 1;            ///< calls per sample
  double maxError = 0;       ///< of the checked first run
  double buildSeconds = 0;
  double runSeconds = 0; ///< wall time from the built kernel to the answer (checks and timing)
  /// Where it was measured: the host and MPI rank of a distributed run (empty, -1 otherwise).
  std::string host;
  int rank = -1;
  /// The worker that measured it ends after answering (its device is unusable: DeviceFault).
  bool workerEnds = false;
};

/// The median of costs (0 when empty).
double medianOf(std::vector<double> costs);

/// Receives the result of inputs[index] (measureEach).
using ResultFn = std::function<void(size_t index, const MeasureResult& result)>;

class Measurer {
public:
  virtual ~Measurer() = default;
  virtual std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) = 0;
  /// Measures the inputs and hands each result to `done` as soon as it is there; starts no new
  /// measurement once *stop is true. Results may come in any order (a distributed measurer
  /// measures several at once): callers that need an order keep it themselves. This default
  /// measures them one at a time, in order, and fills in runSeconds when measure() did not.
  virtual void measureEach(const std::vector<MeasureInput>& inputs, const ResultFn& done,
                           const std::atomic<bool>* stop = nullptr);
};

/// Measures on `target` in one worker process at a time (the machine's cores are the
/// kernel's). workerExe: the wmtune binary; empty: this process's executable.
std::unique_ptr<Measurer> makeWorkerMeasurer(const MeasureOptions& opts,
                                             const target::Target& target,
                                             const std::string& workerExe = "");

/// Costs that are a fixed function of the workload and the schedule (a stable hash, about 1-2
/// ms), not measurements: for tests that need the same "measurements" in every process (the
/// determinism test of `tune`). Never used for tuning.
std::unique_ptr<Measurer> makeSimulatedMeasurer();

// ---- the worker protocol (one JSON object a line) ----
// The tuner sends a WorkerRequest; the worker answers {"id", "stage": "built", "build_s"} once
// the kernel is compiled, then a WorkerReply. The build timeout runs until "built", the run
// timeout from there until the reply.
struct WorkerRequest {
  int64_t id = 0;
  std::string workload;
  std::vector<sched::Step> steps;
  MeasureOptions options;
  target::Target target;
  std::string inject;
};
std::string encodeRequest(const WorkerRequest& r);
/// False and *error when the line is not a request.
bool decodeRequest(const std::string& line, WorkerRequest* r, std::string* error);
std::string encodeBuilt(int64_t id, double buildSeconds);
std::string encodeReply(int64_t id, const MeasureResult& r);

} // namespace wm::runtime
