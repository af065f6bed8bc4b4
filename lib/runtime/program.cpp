// Program builder and runner, and the CPU device (see program.h, device.h).
#include <wm/codegen/codegen.h>
#include <wm/ir/interpreter.h>
#include <wm/rt/abi.h>
#include <wm/rt/parallel.h>
#include <wm/runtime/buffer.h>
#include <wm/runtime/program.h>
#include <wm/runtime/timing.h>
#include <wm/schedule/default_schedule.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>

#include <sys/mman.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace wm::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class CpuDevice : public Device {
public:
  explicit CpuDevice(int threads) { rt::setNumThreads(threads); }
  std::string name() const override { return "cpu"; }
  // Every buffer starts a transparent huge page (2 MiB aligned, madvise'd): its physical
  // address modulo 2 MiB is then the same in every process, so which cache sets it maps to —
  // and with it the kernel's conflict misses — does not change between fresh measurements.
  void* alloc(int64_t bytes) override {
    constexpr size_t huge = size_t(2) << 20;
    size_t size = static_cast<size_t>(bytes > 0 ? (bytes + huge - 1) / huge * huge : huge);
    void* p = std::aligned_alloc(huge, size);
    if (!p) WM_USER_ERROR() << "out of memory for a buffer of " << bytes << " bytes";
    madvise(p, size, MADV_HUGEPAGE); // best effort: where THP is off, plain pages
    std::memset(p, 0, size);
    return p;
  }
  void free(void* p) override { std::free(p); }
  void copyToDevice(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void copyToHost(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void synchronize() override {}
  void pinThreads(bool on) override { rt::setPinning(on); }
  void flushCache() override {
    if (flush_.empty()) flush_.assign(64 << 20, 0);
    for (size_t i = 0; i < flush_.size(); i += 64) flush_[i] = static_cast<char>(flush_[i] + 1);
  }

private:
  std::vector<char> flush_;
};

class CpuKernel : public Kernel {
public:
  explicit CpuKernel(std::unique_ptr<codegen::JitKernel> k) : k_(std::move(k)) {}
  void launch(void** args) override { k_->call(args); }

private:
  std::unique_ptr<codegen::JitKernel> k_;
};

class LocalBuilder : public ProgramBuilder {
public:
  explicit LocalBuilder(target::Target t) : target_(std::move(t)) {}
  BuiltProgram build(const ir::ComputeDAG& dag, const std::vector<sched::Step>& steps) override {
    auto t0 = Clock::now();
    auto r = sched::replay(dag, steps);
    if (!r.error.empty()) throw UserError("step " + std::to_string(r.failedStep) + ": " + r.error);
    BuiltProgram p;
    p.func = lower::lower(r.state);
    if (target_.isGpu()) {
      lower::GpuProgram gpu = lower::splitKernels(p.func, codegen::gpuLaunchLimits(target_));
      std::string ptx = codegen::emitGpu(gpu, target_, codegen::EmitKind::Assembly);
      p.kernel = loadCudaProgram(gpu, ptx);
    } else {
      p.kernel = std::make_unique<CpuKernel>(codegen::JitKernel::compile(p.func, target_));
    }
    p.buildSeconds = since(t0);
    return p;
  }

private:
  target::Target target_;
};

int64_t bufferBytes(const ir::Buffer& b) {
  int64_t bytes = 0;
  if (!checkedMul(b->allocElements(), ir::storageBytes(b->dtype), &bytes))
    WM_USER_ERROR() << "buffer " << b->name << " is too large";
  checkAllocation(bytes, "buffer " + b->name);
  return bytes;
}

std::vector<DeviceBuffer> outputsFor(Device& d, const lower::LoweredFunc& f) {
  std::vector<DeviceBuffer> outs;
  for (auto& o : f.outputs) outs.emplace_back(d, bufferBytes(o));
  return outs;
}

std::vector<void*> argsOf(const std::vector<DeviceBuffer>& ins,
                          const std::vector<DeviceBuffer>& outs) {
  std::vector<void*> a;
  for (auto& b : ins) a.push_back(b.data());
  for (auto& b : outs) a.push_back(b.data());
  return a;
}

std::vector<ir::NDArray> readOutputs(Device& d, const lower::LoweredFunc& f,
                                     const std::vector<DeviceBuffer>& outs) {
  std::vector<ir::NDArray> r;
  for (size_t o = 0; o < outs.size(); ++o) {
    const ir::Buffer& b = f.outputs[o];
    HostBuffer host(b->dtype, b->shape, b->allocElements());
    d.copyToHost(host.data(), outs[o].data(), outs[o].bytes());
    r.push_back(host.toNDArray(b->strides));
  }
  return r;
}

} // namespace

std::vector<ir::NDArray> runProgram(Device& device, BuiltProgram& program,
                                    const std::vector<ir::NDArray>& inputs) {
  WM_CHECK(inputs.size() == program.func.inputs.size())
      << "runProgram: " << inputs.size() << " inputs for " << program.func.inputs.size();
  std::vector<DeviceBuffer> ins;
  for (auto& a : inputs) {
    HostBuffer h = HostBuffer::from(a);
    ins.emplace_back(device, h.bytes());
    device.copyToDevice(ins.back().data(), h.data(), h.bytes());
  }
  auto outs = outputsFor(device, program.func);
  auto args = argsOf(ins, outs);
  program.kernel->launch(args.data());
  device.synchronize();
  return readOutputs(device, program.func, outs);
}

std::unique_ptr<ProgramBuilder> makeLocalBuilder(const target::Target& target) {
  return std::make_unique<LocalBuilder>(target);
}

std::unique_ptr<Device> makeCpuDevice(int threads) {
  return std::make_unique<CpuDevice>(threads);
}

std::unique_ptr<Device> makeDevice(const target::Target& target) {
  if (target.isGpu()) return makeCudaDevice();
  if (target.kind != target::Kind::Llvm)
    throw UserError(std::string("target ") + target::kindName(target.kind) +
                    ": no device for it in this build");
  return makeCpuDevice(target.cores);
}

const TaskData& ProgramRunner::task(const std::string& key, const ir::ComputeDAG& dag,
                                    uint64_t seed) {
  std::string k = key + "#" + std::to_string(seed);
  auto it = tasks_.find(k);
  if (it != tasks_.end()) return it->second;
  TaskData t;
  std::vector<ir::NDArray> inputs = ir::randomInputs(dag, seed);
  for (auto& a : inputs) {
    HostBuffer h = HostBuffer::from(a);
    t.inputs.emplace_back(device_, h.bytes());
    device_.copyToDevice(t.inputs.back().data(), h.data(), h.bytes());
  }
  if (refBuilder_ && refDevice_) { // the default schedule: its parallel loops, not the naive nest
    BuiltProgram naive = refBuilder_->build(dag, sched::defaultSchedule(dag));
    t.reference = runProgram(*refDevice_, naive, inputs);
    return tasks_.emplace(k, std::move(t)).first->second;
  }
  BuiltProgram naive = builder_.build(dag, {});
  auto outs = outputsFor(device_, naive.func);
  auto args = argsOf(t.inputs, outs);
  naive.kernel->launch(args.data());
  device_.synchronize();
  t.reference = readOutputs(device_, naive.func, outs);
  return tasks_.emplace(k, std::move(t)).first->second;
}

MeasureResult ProgramRunner::run(const TaskData& task, BuiltProgram& program,
                                 const MeasureOptions& opts, const std::string& inject) {
  MeasureResult res;
  res.buildSeconds = program.buildSeconds;
  device_.pinThreads(opts.pinThreads);
  auto outs = outputsFor(device_, program.func);
  auto args = argsOf(task.inputs, outs);
  if (inject == "crash") std::raise(SIGSEGV);
  if (inject == "alloc_bomb") // a kernel that allocates without bound (1 GiB at a time)
    while (true) wm_alloc(int64_t(1) << 30);
  if (inject == "hang")
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  // A kernel that writes through a bad pointer (on a GPU: an illegal address, which poisons
  // the context; the worker must be replaced).
  if (inject == "device_fault") args.back() = reinterpret_cast<void*>(uintptr_t(1) << 12);
  auto first0 = Clock::now();
  program.kernel->launch(args.data());
  device_.synchronize();
  double firstRun = since(first0);
  auto got = readOutputs(device_, program.func, outs);
  double maxErr = 0;
  for (size_t o = 0; o < got.size(); ++o) {
    if (inject == "wrong" && got[o].size() > 0) got[o].values()[0] += 1.0;
    maxErr = std::max(maxErr, ir::maxRelativeError(got[o], task.reference[o]));
  }
  res.maxError = std::isfinite(maxErr) ? maxErr : 1e300;
  if (!(maxErr <= opts.tolerance)) {
    res.error = MeasureError::WrongAnswer;
    res.message = "max relative error " + std::to_string(maxErr) + " against the reference";
    return res;
  }
  res.error = MeasureError::None;
  if (firstRun > opts.slowRunS) { // slow: its one (cold) run is its cost
    res.costs = {firstRun};
    res.median = firstRun;
    return res;
  }
  // With the device's own clock (CUDA events) the timed calls are launches alone, queued back
  // to back; on the wall clock each call waits for its kernel.
  auto clock = device_.clock();
  Timing t = timeCalls(
      [&] {
        program.kernel->launch(args.data());
        if (!clock) device_.synchronize();
      },
      opts, firstRun, [&] { device_.flushCache(); }, clock);
  res.costs = std::move(t.samples);
  res.median = t.median;
  res.iqr = t.iqr;
  res.number = t.number;
  return res;
}

} // namespace wm::runtime
