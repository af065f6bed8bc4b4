// The CUDA device and its kernels (program.h: makeCudaDevice, loadCudaProgram), through the
// driver loaded at run time (cuda_driver.h). One context per process (the device's primary
// context), all work on the legacy default stream, so launches are ordered; timing by CUDA
// events around a batch of launches. A driver error while kernels run poisons the context:
// it surfaces as DeviceFault, and the process (a measurement worker) ends after answering.
#include <wm/lower/gpu.h>
#include <wm/runtime/cuda_driver.h>
#include <wm/runtime/program.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>

#include <algorithm>
#include <vector>

namespace wm::runtime {

namespace {

using namespace cuda;

constexpr CUresult kOk = 0;
// CUjit_option and CUfunction_attribute values (the driver's ABI)
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferSize = 6;
constexpr int kFuncMaxThreadsPerBlock = 0, kFuncNumRegs = 4;

struct Context {
  const Driver* d = nullptr;
  CUcontext ctx = nullptr;
};

/// The driver and device 0's primary context, current on the calling thread.
const Context& context() {
  static Context c = [] {
    std::string why;
    Context r;
    r.d = Driver::get(&why);
    if (!r.d) throw UserError("--target cuda: " + why);
    DeviceInfo info;
    if (!probe(0, &info, &why)) throw UserError("--target cuda: " + why);
    CUdevice dev = 0;
    CUresult e = r.d->cuDeviceGet(&dev, 0);
    if (e == kOk) e = r.d->cuDevicePrimaryCtxRetain(&r.ctx, dev);
    if (e != kOk) throw UserError("--target cuda: no context on GPU 0: " + r.d->errorText(e));
    return r;
  }();
  c.d->cuCtxSetCurrent(c.ctx);
  return c;
}

CUdeviceptr dptr(const void* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}

void check(CUresult e, const char* what) {
  if (e != kOk) throw DeviceFault(std::string(what) + ": " + context().d->errorText(e));
}

class CudaDevice : public Device {
public:
  CudaDevice() : d_(*context().d) {}
  ~CudaDevice() override {
    if (flush_) d_.cuMemFree(flush_);
    if (start_) d_.cuEventDestroy(start_);
    if (stop_) d_.cuEventDestroy(stop_);
  }
  std::string name() const override { return "cuda"; }
  void* alloc(int64_t bytes) override {
    CUdeviceptr p = 0;
    CUresult e = d_.cuMemAlloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 4)));
    if (e != kOk)
      WM_USER_ERROR() << "out of GPU memory for a buffer of " << bytes
                      << " bytes: " << d_.errorText(e);
    return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  }
  void free(void* p) override { d_.cuMemFree(dptr(p)); }
  void copyToDevice(void* dst, const void* src, int64_t bytes) override {
    check(d_.cuMemcpyHtoD(dptr(dst), src, static_cast<size_t>(bytes)), "cuMemcpyHtoD");
  }
  void copyToHost(void* dst, const void* src, int64_t bytes) override {
    check(d_.cuMemcpyDtoH(dst, dptr(src), static_cast<size_t>(bytes)), "cuMemcpyDtoH");
  }
  void synchronize() override { check(d_.cuCtxSynchronize(), "a kernel failed"); }
  // A write of 256 MiB, four times the largest L2 of today's GPUs (H200: 60 MB).
  void flushCache() override {
    constexpr size_t bytes = size_t(256) << 20;
    if (!flush_) check(d_.cuMemAlloc(&flush_, bytes), "cuMemAlloc (cache flush)");
    check(d_.cuMemsetD8(flush_, static_cast<unsigned char>(++flushValue_), bytes), "cuMemsetD8");
  }
  std::function<double(const std::function<void()>&, int)> clock() override {
    return [this](const std::function<void()>& launch, int number) {
      if (!start_) check(d_.cuEventCreate(&start_, 0), "cuEventCreate");
      if (!stop_) check(d_.cuEventCreate(&stop_, 0), "cuEventCreate");
      check(d_.cuEventRecord(start_, nullptr), "cuEventRecord");
      for (int i = 0; i < number; ++i) launch();
      check(d_.cuEventRecord(stop_, nullptr), "cuEventRecord");
      check(d_.cuEventSynchronize(stop_), "a kernel failed");
      float ms = 0;
      check(d_.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
      return static_cast<double>(ms) * 1e-3 / std::max(1, number);
    };
  }

private:
  const Driver& d_;
  CUdeviceptr flush_ = 0;
  unsigned flushValue_ = 0;
  CUevent start_ = nullptr, stop_ = nullptr;
};

class CudaProgram : public Kernel {
public:
  CudaProgram(const lower::GpuProgram& p, const std::string& ptx) : d_(*context().d) {
    char log[16384] = {0};
    int opts[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
    void* vals[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log - 1))};
    CUresult e = d_.cuModuleLoadDataEx(&module_, ptx.c_str(), 2, opts, vals);
    if (e != kOk) {
      module_ = nullptr;
      throw DeviceCompileError("the driver rejects the PTX: " + d_.errorText(e) +
                               (log[0] ? std::string(": ") + log : std::string()));
    }
    numArgs_ = p.func.inputs.size() + p.func.outputs.size();
    for (const auto& k : p.kernels) {
      Launch l;
      if ((e = d_.cuModuleGetFunction(&l.fn, module_, k.name.c_str())) != kOk)
        throw DeviceCompileError("kernel " + k.name + ": " + d_.errorText(e));
      for (int i = 0; i < 3; ++i) {
        l.grid[i] = static_cast<unsigned>(k.grid[i]);
        l.block[i] = static_cast<unsigned>(k.block[i]);
      }
      // The registers a thread needs bound the threads a block may have: a launch over it
      // fails ("too many resources requested"), so it is the schedule's error, found here.
      int maxThreads = 0, regs = 0;
      d_.cuFuncGetAttribute(&maxThreads, kFuncMaxThreadsPerBlock, l.fn);
      d_.cuFuncGetAttribute(&regs, kFuncNumRegs, l.fn);
      int64_t threads = k.block[0] * k.block[1] * k.block[2];
      if (maxThreads > 0 && threads > maxThreads)
        throw DeviceCompileError("kernel " + k.name + " uses " + std::to_string(regs) +
                                 " registers a thread, which allow " + std::to_string(maxThreads) +
                                 " threads a block; the schedule launches " +
                                 std::to_string(threads));
      launches_.push_back(l);
    }
    ptrs_.assign(numArgs_ + p.temporaries.size(), 0);
    for (size_t t = 0; t < p.temporaries.size(); ++t) {
      int64_t n = 0;
      if (!checkedMul(std::max<int64_t>(p.temporaries[t]->allocElements(), 1),
                      ir::storageBytes(p.temporaries[t]->dtype), &n))
        WM_USER_ERROR() << "the temporary " << p.temporaries[t]->name << " is too large";
      size_t bytes = static_cast<size_t>(n);
      CUdeviceptr q = 0;
      if ((e = d_.cuMemAlloc(&q, bytes)) != kOk)
        WM_USER_ERROR() << "out of GPU memory for the temporary " << p.temporaries[t]->name << " ("
                        << bytes << " bytes): " << d_.errorText(e);
      temporaries_.push_back(q);
      ptrs_[numArgs_ + t] = q;
    }
    for (auto& q : ptrs_) params_.push_back(&q);
  }
  ~CudaProgram() override {
    for (CUdeviceptr q : temporaries_) d_.cuMemFree(q);
    if (module_) d_.cuModuleUnload(module_);
  }
  void launch(void** args) override {
    for (size_t i = 0; i < numArgs_; ++i) ptrs_[i] = dptr(args[i]);
    for (const auto& l : launches_)
      check(d_.cuLaunchKernel(l.fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                              l.block[2], 0, nullptr, params_.data(), nullptr),
            "cuLaunchKernel");
  }

private:
  struct Launch {
    CUfunction fn = nullptr;
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  };
  const Driver& d_;
  CUmodule module_ = nullptr;
  size_t numArgs_ = 0;
  std::vector<Launch> launches_;
  std::vector<CUdeviceptr> temporaries_;
  std::vector<CUdeviceptr> ptrs_; ///< arguments, then temporaries
  std::vector<void*> params_;     ///< &ptrs_[i], as cuLaunchKernel takes them
};

} // namespace

std::unique_ptr<Device> makeCudaDevice() {
  return std::make_unique<CudaDevice>();
}

std::unique_ptr<Kernel> loadCudaProgram(const lower::GpuProgram& p, const std::string& ptx) {
  return std::make_unique<CudaProgram>(p, ptx);
}

} // namespace wm::runtime
