// Measurement, tuner side (see measure.h): worker processes, the line protocol, timeouts.
//
// Protocol (one JSON object a line): the tuner sends {"id", "workload", "steps", options...};
// the worker answers {"id", "stage": "built", "build_s"} once the kernel is compiled, then
// {"id", "stage": "done", "error", "costs", "max_error", "message"}. The build timeout runs
// until "built", the run timeout from there until "done".
#include <wm/runtime/measure.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstring>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

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

namespace {

std::string selfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw InternalError("cannot find this process's executable");
  return std::string(buf, static_cast<size_t>(n));
}

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
    for (int fd : {toChild[0], toChild[1], fromChild[0], fromChild[1]}) posix_spawn_file_actions_addclose(&fa, fd);
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
      auto left = std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now()).count();
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
    if (WIFSIGNALED(status)) return std::string("worker killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
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
  explicit WorkerMeasurer(MeasureOptions o) : opts_(std::move(o)) {
    std::signal(SIGPIPE, SIG_IGN); // a dead worker must not take the tuner with it
    if (opts_.workerExe.empty()) opts_.workerExe = selfExe();
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
    if (!worker_.alive()) worker_.start(opts_.workerExe);
    nlohmann::json req = {{"id", ++id_},
                          {"workload", in.workload},
                          {"steps", nlohmann::json::parse(sched::stepsToJson(in.steps))},
                          {"warmup", opts_.warmup},
                          {"min_repeat", opts_.minRepeat},
                          {"min_repeat_ms", opts_.minRepeatMs},
                          {"max_repeat", opts_.maxRepeat},
                          {"flush", opts_.flushCache},
                          {"threads", opts_.threads},
                          {"tolerance", opts_.tolerance},
                          {"slow_run_s", opts_.slowRunS},
                          {"seed", opts_.seed},
                          {"mcpu", opts_.mcpu},
                          {"mattr", opts_.mattr},
                          {"inject", in.inject}};
    if (!worker_.send(req.dump())) {
      std::string why = worker_.reap();
      return fail(MeasureError::RunError, "cannot reach the worker: " + why);
    }
    std::string line;
    bool built = false;
    double buildS = 0;
    while (true) {
      auto r = worker_.readLine(&line, built ? opts_.runTimeoutS : opts_.buildTimeoutS);
      if (r == WorkerProcess::Read::Timeout) {
        worker_.stop();
        return built ? fail(MeasureError::RunTimeout, "run exceeded " + std::to_string(opts_.runTimeoutS) + " s")
                     : fail(MeasureError::BuildTimeout, "build exceeded " + std::to_string(opts_.buildTimeoutS) + " s");
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
      if (msg.value("id", -1) != id_) continue;
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
      if (!res.costs.empty()) {
        std::vector<double> c = res.costs;
        std::sort(c.begin(), c.end());
        res.median = c.size() % 2 ? c[c.size() / 2] : 0.5 * (c[c.size() / 2 - 1] + c[c.size() / 2]);
      }
      return res;
    }
  }

  MeasureOptions opts_;
  WorkerProcess worker_;
  int64_t id_ = 0;
};

} // namespace

std::unique_ptr<Measurer> makeWorkerMeasurer(const MeasureOptions& opts) {
  return std::make_unique<WorkerMeasurer>(opts);
}

} // namespace wm::runtime
