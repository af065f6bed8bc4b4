// `wmtune worker`: the measurement worker the tuner starts (not for direct use; hidden from
// --help). It reads WorkerRequests (wm/runtime/measure.h) from stdin, resolves each workload
// spec to its DAG (built-in workloads and ONNX model tasks alike, through the frontend),
// builds the candidate with a ProgramBuilder, checks and times it with a ProgramRunner, and
// answers on the protocol pipe. A task's inputs and reference result are computed once and
// kept while the worker lives.
#include "commands.h"

#include <wm/codegen/codegen.h>
#include <wm/frontend/model.h>
#include <wm/rt/memory.h>
#include <wm/runtime/measure.h>
#include <wm/runtime/program.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <thread>

namespace wm::cli {

namespace {

void writeLine(int fd, const std::string& text) {
  std::string s = text + "\n";
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

// The request in flight, for the out-of-memory handler (a kernel cannot fail and go on: the
// worker answers for its candidate and ends; the tuner starts a fresh one).
int gOut = -1;
int64_t gRequestId = -1;

void onOutOfMemory(int64_t bytes) {
  runtime::MeasureResult r;
  r.error = runtime::MeasureError::RunError;
  r.message = "out of memory: a kernel temporary of " + std::to_string(bytes) +
              " bytes exceeds the worker's memory limit";
  writeLine(gOut, runtime::encodeReply(gRequestId, r));
  std::_Exit(0);
}

/// Limits the worker's address space for one candidate: what it maps now, plus four times the
/// task's tensors (inputs, outputs, a reference copy, temporaries), plus 2 GiB for the compiler.
/// A schedule that allocates without bound then fails alone ("out of memory") instead of taking
/// the machine; the tuner goes on.
void limitMemory(const ir::ComputeDAG& dag) {
  SizeMath m;
  int64_t bytes = 0;
  for (auto& op : dag.ops())
    bytes = m.add(bytes, m.mul(op->numElements(), ir::storageBytes(op->dtype)));
  int64_t extra = m.add(m.mul(4, bytes), int64_t(2) << 30);
  if (m.ok()) limitAddressSpace(extra);
}

/// Builder, device and runner of one target.
struct Backend {
  std::unique_ptr<runtime::ProgramBuilder> builder, refBuilder;
  std::unique_ptr<runtime::Device> device, refDevice;
  std::unique_ptr<runtime::ProgramRunner> runner;
};

class Worker {
public:
  void handle(const runtime::WorkerRequest& req, int out) {
    runtime::MeasureResult res;
    if (req.inject == "build_hang")
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    runtime::BuiltProgram program;
    Backend* be = nullptr;
    const ir::ComputeDAG* dag = nullptr;
    gRequestId = req.id;
    try {
      be = &backend(req.target);
      dag = &dagOf(req.workload);
      // (not on a GPU: the CUDA driver reserves address space far beyond any such limit)
      if (!req.target.isGpu()) limitMemory(*dag);
      program = be->builder->build(*dag, req.steps);
    } catch (const runtime::DeviceCompileError& e) {
      res.error = runtime::MeasureError::CompileDevice;
      res.message = e.what();
      writeLine(out, runtime::encodeReply(req.id, res));
      return;
    } catch (const runtime::DeviceFault& e) {
      deviceFault(req.id, e, out);
    } catch (const std::exception& e) {
      res.error = runtime::MeasureError::BuildError;
      res.message = e.what();
      writeLine(out, runtime::encodeReply(req.id, res));
      return;
    }
    writeLine(out, runtime::encodeBuilt(req.id, program.buildSeconds));
    try {
      const auto& task = be->runner->task(req.workload, *dag, req.options.inputSeed);
      res = be->runner->run(task, program, req.options, req.inject);
    } catch (const runtime::DeviceFault& e) {
      deviceFault(req.id, e, out);
    }
    writeLine(out, runtime::encodeReply(req.id, res));
  }

private:
  /// A kernel fault poisons the GPU context: answer for the candidate, then end (the tuner
  /// starts a fresh worker for the next one).
  [[noreturn]] static void deviceFault(int64_t id, const runtime::DeviceFault& e, int out) {
    runtime::MeasureResult r;
    r.error = runtime::MeasureError::RuntimeDevice;
    r.message = e.what();
    r.workerEnds = true;
    writeLine(out, runtime::encodeReply(id, r));
    std::_Exit(0);
  }

  Backend& backend(const target::Target& t) {
    std::string key = t.toJson();
    auto it = backends_.find(key);
    if (it != backends_.end()) return it->second;
    Backend b;
    b.builder = runtime::makeLocalBuilder(t);
    b.device = runtime::makeDevice(t);
    if (t.isGpu()) { // the reference result on this machine's CPU, all cores
      target::Target host = codegen::resolveTarget({});
      b.refBuilder = runtime::makeLocalBuilder(host);
      b.refDevice = runtime::makeCpuDevice(host.cores);
    }
    b.runner = std::make_unique<runtime::ProgramRunner>(*b.device, *b.builder, b.refDevice.get(),
                                                        b.refBuilder.get());
    return backends_.emplace(key, std::move(b)).first->second;
  }
  const ir::ComputeDAG& dagOf(const std::string& spec) {
    auto it = dags_.find(spec);
    if (it == dags_.end()) it = dags_.emplace(spec, frontend::workloadDag(spec)).first;
    return it->second;
  }

  std::map<std::string, Backend> backends_;
  std::map<std::string, ir::ComputeDAG> dags_;
};

int runWorker(int in, int out) {
  Worker w;
  std::string buf, line;
  while (readLine(in, &line, &buf)) {
    runtime::WorkerRequest req;
    std::string err;
    if (!runtime::decodeRequest(line, &req, &err)) {
      runtime::MeasureResult r;
      r.message = "bad request: " + err;
      writeLine(out, runtime::encodeReply(-1, r));
      continue;
    }
    w.handle(req, out);
  }
  return 0;
}

} // namespace

Command addWorkerCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("worker", "Measurement worker (started by the tuner)");
  sub->group(""); // hidden: an internal mode
  return []() {
    int out = dup(1);
    dup2(2, 1); // nothing but the protocol may reach the pipe
    gOut = out;
    rt::setOutOfMemoryHandler(onOutOfMemory);
    return runWorker(0, out);
  };
}

} // namespace wm::cli
