// Whole-model execution (see graph_executor.h).
#include <wm/codegen/codegen.h>
#include <wm/ir/printer.h>
#include <wm/lower/lower.h>
#include <wm/rt/parallel.h>
#include <wm/runtime/buffer.h>
#include <wm/runtime/graph_executor.h>
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
  std::vector<std::unique_ptr<codegen::JitKernel>> kernels; // per task
  std::vector<HostBuffer> storage;
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
        r = sched::replay(task.dag, sched::defaultSchedule(task.dag));
        WM_CHECK(r.error.empty()) << "default schedule of task " << task.key << ": " << r.error;
      }
      lower::LoweredFunc f = lower::lower(r.state);
      WM_CHECK(f.outputs.size() == 1)
          << "task " << task.key << " has " << f.outputs.size() << " outputs";
      const ir::Buffer& out = f.outputs[0];
      WM_CHECK(out->allocElements() == task.dag.outputs()[0]->numElements())
          << "task " << task.key << ": the schedule pads its output buffer";
      kernels.push_back(codegen::JitKernel::compile(f, target));
      stats.tunedKernels += tuned;
    }
    stats.kernels = static_cast<int>(kernels.size());
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
    for (int64_t bytes : mp.slotBytes) {
      storage.push_back(HostBuffer::raw(bytes));
      slots.push_back(storage.back().data());
    }
    for (size_t v = 0; v < nv; ++v) {
      const PValue& pv = p.values[v];
      switch (mp.kind[v]) {
      case frontend::MemoryPlan::Kind::Constant:
        storage.push_back(HostBuffer::raw(frontend::valueBytes(pv)));
        storeElements(storage.back().data(), *pv.constant);
        ptr[v] = storage.back().data();
        break;
      case frontend::MemoryPlan::Kind::Input:
        storage.push_back(HostBuffer::raw(frontend::valueBytes(pv)));
        ptr[v] = storage.back().data();
        break;
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
};

GraphExecutor::GraphExecutor(const frontend::Program& program, const frontend::ModelPlan& plan,
                             const std::map<std::string, std::vector<sched::Step>>& schedules,
                             const target::Target& target)
    : impl_(std::make_unique<Impl>(program, plan)) {
  impl_->threads = target.cores;
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
  rt::setNumThreads(impl_->threads);
  for (size_t g = 0; g < impl_->plan.groups.size(); ++g) {
    impl_->kernels[impl_->plan.groups[g].task]->call(impl_->args[g].data());
    if (afterGroup) afterGroup(g);
  }
}

std::vector<double> GraphExecutor::profileKernels(const MeasureOptions& timing) {
  rt::setNumThreads(impl_->threads);
  std::vector<double> out;
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
    storeElements(impl_->ptr[p.inputs[i]], inputs[i]);
  }
  // Indices known only at run time: graph inputs are checked before the kernels run, computed
  // ones right after the kernel that computes them (before a later one reuses their buffer).
  // The kernels clamp such indices, so a bad one has read a wrong element, nothing else.
  auto checkIndices = [&](int root) {
    for (const auto& r : impl_->indexRanges) {
      if (p.root(r.value) != root || !impl_->ptr[root]) continue;
      const PValue& v = p.values[r.value];
      ir::NDArray a = loadElements(impl_->ptr[root], v.dtype, v.shape);
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
      outs.push_back(loadElements(impl_->ptr[r], pv.dtype, pv.shape));
    }
  }
  return outs;
}

} // namespace wm::runtime
