// Measurement, worker side (see measure.h): builds a candidate, checks its first run against
// the task's reference, times it, and answers on the protocol pipe. One task's inputs and
// reference result are computed once and kept while the worker lives.
#include <wm/codegen/llvm.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/lower/lower.h>
#include <wm/runtime/buffer.h>
#include <wm/runtime/measure.h>
#include <wm/runtime/parallel.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <map>
#include <thread>

namespace wm::runtime {

namespace {

using Clock = std::chrono::steady_clock;

struct Task {
  std::vector<HostBuffer> inputs;
  std::vector<ir::NDArray> reference;
};

void writeLine(int fd, const nlohmann::json& j) {
  std::string s = j.dump() + "\n";
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) std::_Exit(3); // the tuner is gone
    off += static_cast<size_t>(n);
  }
}

bool readLine(int fd, std::string* line, std::string* buf) {
  while (true) {
    size_t nl = buf->find('\n');
    if (nl != std::string::npos) {
      *line = buf->substr(0, nl);
      buf->erase(0, nl + 1);
      return true;
    }
    char chunk[65536];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf->append(chunk, static_cast<size_t>(n));
  }
}

std::vector<void*> argsOf(std::vector<HostBuffer>& ins, std::vector<HostBuffer>& outs) {
  std::vector<void*> a;
  for (auto& b : ins) a.push_back(b.data());
  for (auto& b : outs) a.push_back(b.data());
  return a;
}

std::vector<HostBuffer> outputsFor(const lower::LoweredFunc& f) {
  std::vector<HostBuffer> outs;
  for (auto& o : f.outputs) outs.emplace_back(o->dtype, o->shape, o->allocElements());
  return outs;
}

class Worker {
public:
  nlohmann::json handle(const nlohmann::json& req, int out) {
    int64_t id = req.value("id", 0);
    nlohmann::json done = {{"id", id}, {"stage", "done"}};
    std::string inject = req.value("inject", "");
    if (inject == "build_hang")
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    auto t0 = Clock::now();
    int threads = req.value("threads", 0);
    setNumThreads(threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()));
    auto target = codegen::CpuTarget::host(req.value("mcpu", ""), req.value("mattr", ""));
    Workload w;
    std::vector<sched::Step> steps;
    lower::LoweredFunc f;
    std::unique_ptr<codegen::JitKernel> kernel;
    try {
      std::string spec = req.value("workload", "");
      if (spec.rfind("onnx:", 0) == 0) { // a task of an ONNX model
        w.spec = w.canonical = spec;
        w.dag = frontend::onnxTaskDag(spec);
      } else {
        w = parseWorkload(spec);
      }
      std::string err;
      if (!sched::stepsFromJson(req["steps"].dump(), &steps, &err)) throw UserError(err);
      auto r = sched::replay(w.dag, steps);
      if (!r.error.empty()) throw UserError("step " + std::to_string(r.failedStep) + ": " + r.error);
      f = lower::lower(r.state);
      kernel = codegen::JitKernel::compile(f, target);
    } catch (const std::exception& e) {
      done["error"] = measureErrorName(MeasureError::BuildError);
      done["message"] = e.what();
      return done;
    }
    writeLine(out, {{"id", id}, {"stage", "built"},
                    {"build_s", std::chrono::duration<double>(Clock::now() - t0).count()}});

    Task& task = taskFor(w, req.value("seed", uint64_t(0)), target);
    auto outs = outputsFor(f);
    auto args = argsOf(task.inputs, outs);
    if (inject == "crash") std::raise(SIGSEGV);
    if (inject == "hang")
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    auto first0 = Clock::now();
    kernel->call(args.data());
    double firstRun = std::chrono::duration<double>(Clock::now() - first0).count();
    double maxErr = 0;
    for (size_t o = 0; o < outs.size(); ++o) {
      ir::NDArray got = outs[o].toNDArray(f.outputs[o]->strides);
      if (inject == "wrong" && got.size() > 0) got.values()[0] += 1.0;
      maxErr = std::max(maxErr, ir::maxRelativeError(got, task.reference[o]));
    }
    done["max_error"] = std::isfinite(maxErr) ? maxErr : 1e300;
    if (!(maxErr <= req.value("tolerance", 1e-3))) {
      done["error"] = measureErrorName(MeasureError::WrongAnswer);
      done["message"] = "max relative error " + std::to_string(maxErr) + " against the reference";
      return done;
    }
    if (firstRun > req.value("slow_run_s", 0.5)) { // slow: its one (cold) run is its cost
      done["error"] = measureErrorName(MeasureError::None);
      done["costs"] = std::vector<double>{firstRun};
      return done;
    }
    for (int i = 0; i < req.value("warmup", 1); ++i) kernel->call(args.data());
    bool flush = req.value("flush", false);
    int minRepeat = req.value("min_repeat", 3), maxRepeat = req.value("max_repeat", 1000);
    double minMs = req.value("min_repeat_ms", 100.0);
    std::vector<double> costs;
    double total = 0;
    while (static_cast<int>(costs.size()) < maxRepeat &&
           (static_cast<int>(costs.size()) < minRepeat || total * 1e3 < minMs)) {
      if (flush) flushCache();
      auto s = Clock::now();
      kernel->call(args.data());
      double dt = std::chrono::duration<double>(Clock::now() - s).count();
      costs.push_back(dt);
      total += dt;
    }
    done["error"] = measureErrorName(MeasureError::None);
    done["costs"] = costs;
    return done;
  }

private:
  Task& taskFor(const Workload& w, uint64_t seed, const codegen::CpuTarget& target) {
    std::string key = w.canonical + "#" + std::to_string(seed);
    auto it = tasks_.find(key);
    if (it != tasks_.end()) return it->second;
    Task t;
    auto inputs = ir::randomInputs(w.dag, seed);
    for (auto& a : inputs) t.inputs.push_back(HostBuffer::from(a));
    // The reference: the unscheduled program, compiled by the same backend (the property tests
    // check both against the reference interpreter).
    auto naive = lower::lower(sched::State(w.dag));
    auto kernel = codegen::JitKernel::compile(naive, target);
    auto outs = outputsFor(naive);
    auto args = argsOf(t.inputs, outs);
    kernel->call(args.data());
    for (size_t o = 0; o < outs.size(); ++o) t.reference.push_back(outs[o].toNDArray(naive.outputs[o]->strides));
    return tasks_.emplace(key, std::move(t)).first->second;
  }

  void flushCache() {
    if (flush_.empty()) flush_.assign(64 << 20, 0);
    for (size_t i = 0; i < flush_.size(); i += 64) flush_[i] = static_cast<char>(flush_[i] + 1);
  }

  std::map<std::string, Task> tasks_;
  std::vector<char> flush_;
};

} // namespace

int runWorker(int in, int out) {
  Worker w;
  std::string buf, line;
  while (readLine(in, &line, &buf)) {
    nlohmann::json req;
    try {
      req = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      writeLine(out, {{"stage", "done"}, {"error", "unknown"}, {"message", std::string("bad request: ") + e.what()}});
      continue;
    }
    writeLine(out, w.handle(req, out));
  }
  return 0;
}

} // namespace wm::runtime
