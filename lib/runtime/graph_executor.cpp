// Whole-model execution (see graph_executor.h).
#include <wm/codegen/codegen.h>
#include <wm/ir/printer.h>
#include <wm/lower/lower.h>
#include <wm/rt/parallel.h>
#include <wm/runtime/buffer.h>
#include <wm/runtime/graph_executor.h>
#include <wm/runtime/program.h>
#include <wm/runtime/timing.h>
#include <wm/schedule/default_schedule.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>

namespace wm::runtime {

using frontend::PValue;

struct GraphExecutor::Impl {
  const frontend::Program& p;
  const frontend::ModelPlan& plan;
  std::vector<std::unique_ptr<codegen::JitKernel>> kernels; // per task (CPU)
  std::vector<HostBuffer> storage;
  // On a GPU: the device, the kernels per task and the device memory (storage: unused).
  std::unique_ptr<Device> device;
  std::vector<std::unique_ptr<Kernel>> deviceKernels;
  std::vector<DeviceBuffer> deviceStorage;
  std::vector<void*> ptr; // per value: where its bytes live (nullptr: not materialized)
  std::vector<std::vector<void*>> args; // per group
  ExecutorStats stats;
  int threads = 0;
  std::vector<frontend::IndexRange> indexRanges;

  Impl(const frontend::Program& prog, const frontend::ModelPlan& pl)
      : p(prog), plan(pl), indexRanges(frontend::indexRanges(prog)) {}

  void compile(const std::map<std::string, std::vector<sched::Step>>& schedules,
               const target::Target& target) {
    auto t0 = std::chrono::steady_clock::now();
    for (auto& task : plan.tasks) {
      sched::ReplayResult r;
      auto it = schedules.find(task.key);
      bool tuned = false;
      if (it != schedules.end()) {
        r = sched::replay(task.dag, it->second);
        if (r.error.empty())
          tuned = true;
        else
          spdlog::warn(
              "task {}: the logged schedule does not replay (step {}: {}); using the default",
              task.key, r.failedStep, r.error);
      }
      if (!tuned) {
        r = sched::replay(task.dag, target.isGpu() ? sched::defaultGpuSchedule(task.dag)
                                                   : sched::defaultSchedule(task.dag));
        WM_CHECK(r.error.empty()) << "default schedule of task " << task.key << ": " << r.error;
      }
      lower::LoweredFunc f = lower::lower(r.state);
      WM_CHECK(f.outputs.size() == 1)
          << "task " << task.key << " has " << f.outputs.size() << " outputs";
      const ir::Buffer& out = f.outputs[0];
      WM_CHECK(out->allocElements() == task.dag.outputs()[0]->numElements())
          << "task " << task.key << ": the schedule pads its output buffer";
      if (target.isGpu()) {
        lower::GpuProgram gpu = lower::splitKernels(f, codegen::gpuLaunchLimits(target));
        deviceKernels.push_back(
            loadCudaProgram(gpu, codegen::emitGpu(gpu, target, codegen::EmitKind::Assembly)));
      } else {
        kernels.push_back(codegen::JitKernel::compile(f, target));
      }
      stats.tunedKernels += tuned;
    }
    stats.kernels = static_cast<int>(plan.tasks.size());
    stats.compileSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void planBuffers() {
    size_t nv = p.values.size();
    ptr.assign(nv, nullptr);
    frontend::MemoryPlan mp = frontend::planMemory(p, plan);
    stats.bufferBytes = mp.plannedBytes;
    stats.unplannedBytes = mp.unplannedBytes;
    std::vector<void*> slots;
    // Memory of `bytes` bytes: the host's, or the device's (deviceStorage keeps it).
    auto allocate = [&](int64_t bytes) {
      if (device) {
        deviceStorage.emplace_back(*device, bytes);
        return deviceStorage.back().data();
      }
      storage.push_back(HostBuffer::raw(bytes));
      return storage.back().data();
    };
    for (int64_t bytes : mp.slotBytes) slots.push_back(allocate(bytes));
    for (size_t v = 0; v < nv; ++v) {
      const PValue& pv = p.values[v];
      switch (mp.kind[v]) {
      case frontend::MemoryPlan::Kind::Constant:
        ptr[v] = allocate(frontend::valueBytes(pv));
        store(ptr[v], *pv.constant);
        break;
      case frontend::MemoryPlan::Kind::Input: ptr[v] = allocate(frontend::valueBytes(pv)); break;
      case frontend::MemoryPlan::Kind::Slot: ptr[v] = slots[mp.slot[v]]; break;
      case frontend::MemoryPlan::Kind::None: break;
      }
    }
    for (size_t v = 0; v < nv; ++v)
      if (p.values[v].aliasOf >= 0) ptr[v] = ptr[p.values[v].aliasOf];
    args.clear();
    for (auto& g : plan.groups) {
      std::vector<void*> a;
      for (int v : g.inputs) {
        WM_CHECK(ptr[p.root(v)]) << "value " << p.values[v].name << " has no buffer";
        a.push_back(ptr[p.root(v)]);
      }
      a.push_back(ptr[g.output]);
      args.push_back(std::move(a));
    }
  }

  /// a's elements into memory of the executor (host or device).
  void store(void* dst, const ir::NDArray& a) {
    if (!device) return storeElements(dst, a);
    HostBuffer host = HostBuffer::from(a);
    device->copyToDevice(dst, host.data(), host.bytes());
  }
  /// An array out of memory of the executor.
  ir::NDArray load(const void* src, ir::DType t, const ir::Shape& shape) {
    if (!device) return loadElements(src, t, shape);
    HostBuffer host(t, shape);
    device->copyToHost(host.data(), src, host.bytes());
    return host.toNDArray();
  }
};

GraphExecutor::GraphExecutor(const frontend::Program& program, const frontend::ModelPlan& plan,
                             const std::map<std::string, std::vector<sched::Step>>& schedules,
                             const target::Target& target)
    : impl_(std::make_unique<Impl>(program, plan)) {
  impl_->threads = target.cores;
  if (target.isGpu())
    impl_->device = makeCudaDevice();
  else
    rt::setNumThreads(impl_->threads);
  impl_->compile(schedules, target);
  impl_->planBuffers();
}

GraphExecutor::~GraphExecutor() = default;

const ExecutorStats& GraphExecutor::stats() const {
  return impl_->stats;
}

void GraphExecutor::runKernels() {
  runGroups(nullptr);
}

void GraphExecutor::runGroups(const std::function<void(size_t)>& afterGroup) {
  if (impl_->device) { // every kernel on the device's one stream, in order
    for (size_t g = 0; g < impl_->plan.groups.size(); ++g) {
      impl_->deviceKernels[impl_->plan.groups[g].task]->launch(impl_->args[g].data());
      if (afterGroup) afterGroup(g);
    }
    impl_->device->synchronize();
    return;
  }
  rt::setNumThreads(impl_->threads);
  for (size_t g = 0; g < impl_->plan.groups.size(); ++g) {
    impl_->kernels[impl_->plan.groups[g].task]->call(impl_->args[g].data());
    if (afterGroup) afterGroup(g);
  }
}

std::vector<double> GraphExecutor::profileKernels(const MeasureOptions& timing) {
  std::vector<double> out;
  if (impl_->device) {
    auto clock = impl_->device->clock();
    for (size_t g = 0; g < impl_->plan.groups.size(); ++g) {
      auto& k = *impl_->deviceKernels[impl_->plan.groups[g].task];
      void** args = impl_->args[g].data();
      out.push_back(timeCalls([&] { k.launch(args); }, timing, 0, {}, clock).median);
    }
    return out;
  }
  rt::setNumThreads(impl_->threads);
  for (size_t g = 0; g < impl_->plan.groups.size(); ++g) {
    auto& k = *impl_->kernels[impl_->plan.groups[g].task];
    void** args = impl_->args[g].data();
    out.push_back(timeCalls([&] { k.call(args); }, timing).median);
  }
  return out;
}

std::vector<ir::NDArray> GraphExecutor::run(const std::vector<ir::NDArray>& inputs) {
  const auto& p = impl_->p;
  if (inputs.size() != p.inputs.size())
    WM_USER_ERROR() << p.path << ": the model has " << p.inputs.size() << " inputs, got "
                    << inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PValue& v = p.values[p.inputs[i]];
    if (inputs[i].shape() != v.shape || inputs[i].dtype() != v.dtype)
      WM_USER_ERROR() << p.path << ": input '" << v.name << "' is "
                      << ir::typeString(v.dtype, v.shape) << ", got "
                      << ir::typeString(inputs[i].dtype(), inputs[i].shape());
    impl_->store(impl_->ptr[p.inputs[i]], inputs[i]);
  }
  // Indices known only at run time: graph inputs are checked before the kernels run, computed
  // ones right after the kernel that computes them (before a later one reuses their buffer).
  // The kernels clamp such indices, so a bad one has read a wrong element, nothing else.
  auto checkIndices = [&](int root) {
    for (const auto& r : impl_->indexRanges) {
      if (p.root(r.value) != root || !impl_->ptr[root]) continue;
      const PValue& v = p.values[r.value];
      ir::NDArray a = impl_->load(impl_->ptr[root], v.dtype, v.shape);
      for (double x : a.values())
        if (x < static_cast<double>(r.lo) || x > static_cast<double>(r.hi))
          WM_USER_ERROR() << p.path << ": node " << r.node << ": index " << static_cast<int64_t>(x)
                          << " in '" << v.name << "' is out of range [" << r.lo << ", " << r.hi
                          << "]";
    }
  };
  for (int in : p.inputs) checkIndices(p.root(in));
  if (impl_->indexRanges.empty())
    runKernels();
  else
    runGroups([&](size_t g) { checkIndices(p.root(impl_->plan.groups[g].output)); });
  std::vector<ir::NDArray> outs;
  for (int v : p.outputs) {
    const PValue& pv = p.values[v];
    int r = p.root(v);
    if (p.values[r].constant) {
      ir::NDArray a = *p.values[r].constant;
      ir::NDArray o(pv.dtype, pv.shape);
      o.values() = a.values();
      outs.push_back(std::move(o));
    } else {
      outs.push_back(impl_->load(impl_->ptr[r], pv.dtype, pv.shape));
    }
  }
  return outs;
}

} // namespace wm::runtime
