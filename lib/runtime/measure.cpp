// Measurement, tuner side (see measure.h): the option table, the line protocol, worker
// processes and their timeouts.
#include <wm/runtime/measure.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/hash.h>
#include <wm/support/options_json.h>

#include <nlohmann/json.hpp>

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>

extern char** environ;

namespace wm::runtime {

const char* measureErrorName(MeasureError e) {
  switch (e) {
#define WM_X(n, s)                                                                                 \
  case MeasureError::n: return s;
    WM_MEASURE_ERRORS(WM_X)
#undef WM_X
  }
  return "unknown";
}

bool parseMeasureError(const std::string& s, MeasureError* out) {
#define WM_X(n, str)                                                                               \
  if (s == str) {                                                                                  \
    *out = MeasureError::n;                                                                        \
    return true;                                                                                   \
  }
  WM_MEASURE_ERRORS(WM_X)
#undef WM_X
  return false;
}

const OptionTable<MeasureOptions>& measureOptionTable() {
  using M = MeasureOptions;
  static const OptionTable<M> t = {
      {"warmup", "--warmup", "Untimed runs before timing (then batches until two agree)",
       &M::warmup, 0, 1e6},
      {"repeat", "--repeat", "Samples; each times `number` calls", &M::repeat, 1, 1e6},
      {"min_repeat_ms", "--min-ms", "Milliseconds a sample lasts at least (sets `number`)",
       &M::minRepeatMs, 0, 1e9},
      {"max_spread", "--max-spread", "IQR / median above which the samples are taken again",
       &M::maxSpread, 0, 1e9},
      {"retries", "--retries", "How often a spread timing is taken again", &M::retries, 0, 100},
      {"flush_cache", "--flush", "Flush the caches before each sample (one call per sample)",
       &M::flushCache},
      {"pin_threads", "--pin,!--no-pin",
       "Pin kernel threads to cores while timing (--no-pin: let the OS place them)",
       &M::pinThreads},
      {"build_timeout_s", "--build-timeout", "Seconds a build may take", &M::buildTimeoutS, 0.001,
       1e6},
      {"run_timeout_s", "--run-timeout", "Seconds a run may take", &M::runTimeoutS, 0.001, 1e6},
      {"tolerance", "--tolerance", "Largest relative error against the reference", &M::tolerance, 0,
       1e300},
      {"slow_run_s", "--slow-run", "Seconds after which a candidate's first run is its only run",
       &M::slowRunS, 0, 1e6},
      {"input_seed", "--input-seed", "Seed of the random inputs", &M::inputSeed},
  };
  return t;
}

void Measurer::measureEach(const std::vector<MeasureInput>& inputs, const ResultFn& done,
                           const std::atomic<bool>* stop) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (stop && *stop) return;
    auto t0 = std::chrono::steady_clock::now();
    MeasureResult r = measure({inputs[i]}).at(0);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.runSeconds == 0) r.runSeconds = std::max(0.0, took - r.buildSeconds);
    done(i, r);
  }
}

double medianOf(std::vector<double> c) {
  if (c.empty()) return 0;
  std::sort(c.begin(), c.end());
  return c.size() % 2 ? c[c.size() / 2] : 0.5 * (c[c.size() / 2 - 1] + c[c.size() / 2]);
}

std::string encodeRequest(const WorkerRequest& r) {
  nlohmann::json j = {{"id", r.id},
                      {"workload", r.workload},
                      {"steps", nlohmann::json::parse(sched::stepsToJson(r.steps))},
                      {"options", optionsToJson(r.options, measureOptionTable())},
                      {"target", nlohmann::json::parse(r.target.toJson())},
                      {"inject", r.inject}};
  return j.dump();
}

bool decodeRequest(const std::string& line, WorkerRequest* r, std::string* error) {
  try {
    auto j = nlohmann::json::parse(line);
    r->id = j.at("id").get<int64_t>();
    r->workload = j.at("workload").get<std::string>();
    if (!sched::stepsFromJson(j.at("steps").dump(), &r->steps, error)) return false;
    r->options = MeasureOptions();
    optionsFromJson(r->options, measureOptionTable(), j.at("options"), "options");
    if (!target::Target::fromJson(j.at("target").dump(), &r->target, error)) return false;
    r->inject = j.value("inject", "");
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

std::string encodeBuilt(int64_t id, double buildSeconds) {
  return nlohmann::json{{"id", id}, {"stage", "built"}, {"build_s", buildSeconds}}.dump();
}

std::string encodeReply(int64_t id, const MeasureResult& r) {
  nlohmann::json j = {{"id", id},
                      {"stage", "done"},
                      {"error", measureErrorName(r.error)},
                      {"message", r.message},
                      {"max_error", std::isfinite(r.maxError) ? r.maxError : 1e300},
                      {"iqr", r.iqr},
                      {"number", r.number}};
  if (!r.costs.empty()) j["costs"] = r.costs;
  if (r.workerEnds) j["worker_ends"] = true;
  return j.dump();
}

namespace {

class WorkerProcess {
public:
  ~WorkerProcess() { stop(); }

  bool alive() const { return pid_ > 0; }

  void start(const std::string& exe) {
    int toChild[2], fromChild[2];
    if (pipe(toChild) != 0 || pipe(fromChild) != 0) throw InternalError("pipe() failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, toChild[0], 0);
    posix_spawn_file_actions_adddup2(&fa, fromChild[1], 1);
    for (int fd : {toChild[0], toChild[1], fromChild[0], fromChild[1]})
      posix_spawn_file_actions_addclose(&fa, fd);
    std::string arg0 = exe, arg1 = "worker";
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    // Its own process group: a Ctrl-C of the tuner must not kill a measurement in flight.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, exe.c_str(), &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(toChild[0]);
    close(fromChild[1]);
    if (rc != 0) {
      close(toChild[1]);
      close(fromChild[0]);
      throw UserError("cannot start the measurement worker " + exe + ": " + std::strerror(rc));
    }
    pid_ = pid;
    to_ = toChild[1];
    from_ = fromChild[0];
    buf_.clear();
  }

  bool send(const std::string& line) {
    std::string s = line + "\n";
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = write(to_, s.data() + off, s.size() - off);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  enum class Read { Line, Timeout, Eof };
  Read readLine(std::string* line, double timeoutS) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
    while (true) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        *line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return Read::Line;
      }
      auto left =
          std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now())
              .count();
      if (left <= 0) return Read::Timeout;
      pollfd p{from_, POLLIN, 0};
      int r = poll(&p, 1, static_cast<int>(std::min(left, 1e9)) + 1);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) continue;
      char chunk[65536];
      ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) return Read::Eof;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  /// Why the worker ended (after Eof); reaps it.
  std::string reap() {
    if (pid_ <= 0) return "no worker";
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    closeFds();
    if (WIFSIGNALED(status))
      return std::string("worker killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
             strsignal(WTERMSIG(status)) + ")";
    if (WIFEXITED(status)) return "worker exited with code " + std::to_string(WEXITSTATUS(status));
    return "worker ended";
  }

  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    closeFds();
  }

private:
  void closeFds() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    to_ = from_ = -1;
  }
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
};

class WorkerMeasurer : public Measurer {
public:
  WorkerMeasurer(MeasureOptions o, target::Target t, std::string exe)
      : opts_(std::move(o)), target_(std::move(t)), exe_(std::move(exe)) {
    std::signal(SIGPIPE, SIG_IGN); // a dead worker must not take the tuner with it
    if (exe_.empty()) exe_ = selfExecutable();
  }

  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override {
    std::vector<MeasureResult> out;
    for (auto& in : inputs) out.push_back(one(in));
    return out;
  }

private:
  MeasureResult fail(MeasureError e, std::string msg) {
    MeasureResult r;
    r.error = e;
    r.message = std::move(msg);
    return r;
  }

  MeasureResult one(const MeasureInput& in) {
    if (!worker_.alive()) worker_.start(exe_);
    WorkerRequest req{++id_, in.workload, in.steps, opts_, target_, in.inject};
    if (!worker_.send(encodeRequest(req))) {
      // The worker ended after its last answer (it answers "out of memory" and exits): a
      // fresh one takes this candidate.
      worker_.reap();
      worker_.start(exe_);
      if (!worker_.send(encodeRequest(req))) {
        std::string why = worker_.reap();
        return fail(MeasureError::RunError, "cannot reach the worker: " + why);
      }
    }
    std::string line;
    bool built = false;
    double buildS = 0;
    while (true) {
      auto r = worker_.readLine(&line, built ? opts_.runTimeoutS : opts_.buildTimeoutS);
      if (r == WorkerProcess::Read::Timeout) {
        worker_.stop();
        return built ? fail(MeasureError::RunTimeout,
                            "run exceeded " + std::to_string(opts_.runTimeoutS) + " s")
                     : fail(MeasureError::BuildTimeout,
                            "build exceeded " + std::to_string(opts_.buildTimeoutS) + " s");
      }
      if (r == WorkerProcess::Read::Eof) {
        std::string why = worker_.reap();
        return fail(built ? MeasureError::RunError : MeasureError::BuildError, why);
      }
      nlohmann::json msg;
      try {
        msg = nlohmann::json::parse(line);
      } catch (const std::exception&) {
        worker_.stop();
        return fail(MeasureError::Unknown, "unreadable worker reply: " + line.substr(0, 200));
      }
      int64_t replyId = msg.value("id", int64_t(-1));
      if (replyId != id_ && replyId != -1) continue; // -1: the worker could not read the request
      std::string stage = msg.value("stage", "");
      if (stage == "built") {
        built = true;
        buildS = msg.value("build_s", 0.0);
        continue;
      }
      MeasureResult res;
      MeasureError e = MeasureError::Unknown;
      parseMeasureError(msg.value("error", "unknown"), &e);
      res.error = e;
      res.message = msg.value("message", "");
      res.buildSeconds = buildS;
      res.maxError = msg.value("max_error", 0.0);
      if (msg.contains("costs")) res.costs = msg["costs"].get<std::vector<double>>();
      res.median = medianOf(res.costs);
      res.iqr = msg.value("iqr", 0.0);
      res.number = msg.value("number", 1);
      // It ends after this answer: out of memory, or a device fault that poisoned its context.
      if (res.message.rfind("out of memory", 0) == 0 || msg.value("worker_ends", false))
        worker_.stop();
      return res;
    }
  }

  MeasureOptions opts_;
  target::Target target_;
  std::string exe_;
  WorkerProcess worker_;
  int64_t id_ = 0;
};

} // namespace

namespace {

class SimulatedMeasurer : public Measurer {
public:
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override {
    std::vector<MeasureResult> out;
    for (auto& in : inputs) {
      uint64_t h =
          StableHasher().addString(in.workload).addString(sched::stepsToJson(in.steps)).value();
      MeasureResult r;
      r.error = MeasureError::None;
      r.costs = {1e-3 * (1.0 + static_cast<double>(h % 100003) / 100003.0)};
      r.median = r.costs[0];
      out.push_back(std::move(r));
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Measurer> makeSimulatedMeasurer() {
  return std::make_unique<SimulatedMeasurer>();
}

std::unique_ptr<Measurer> makeWorkerMeasurer(const MeasureOptions& opts,
                                             const target::Target& target,
                                             const std::string& workerExe) {
  return std::make_unique<WorkerMeasurer>(opts, target, workerExe);
}

} // namespace wm::runtime
