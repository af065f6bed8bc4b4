// The CUDA driver loaded at run time (see cuda_driver.h). Self-contained on purpose: the
// standard library and libdl only.
#include <wm/runtime/cuda_driver.h>

#include <dlfcn.h>

#include <mutex>

namespace wm::runtime::cuda {

namespace {

constexpr int kSuccess = 0;
// CUdevice_attribute values (the driver's ABI)
enum : int {
  kMaxThreadsPerBlock = 1,
  kMaxSharedPerBlock = 8,
  kWarpSize = 10,
  kMaxRegistersPerBlock = 12,
  kClockRate = 13,
  kSmCount = 16,
  kMemoryClockRate = 36,
  kBusWidth = 37,
  kMajor = 75,
  kMinor = 76,
};

template <typename F> bool bind(void* lib, F*& fn, const char* name, const char* alt = nullptr) {
  void* p = dlsym(lib, name);
  if (!p && alt) p = dlsym(lib, alt);
  fn = reinterpret_cast<F*>(p);
  return p != nullptr;
}

struct Loaded {
  Driver d{};
  std::string why;
  bool ok = false;
};

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = std::string("no libcuda.so.1 (the NVIDIA driver is not installed): ") + (e ? e : "");
    return l;
  }
  Driver& d = l.d;
  const char* missing = nullptr;
  auto need = [&](bool found, const char* name) {
    if (!found && !missing) missing = name;
  };
  need(bind(lib, d.cuInit, "cuInit"), "cuInit");
  need(bind(lib, d.cuDriverGetVersion, "cuDriverGetVersion"), "cuDriverGetVersion");
  need(bind(lib, d.cuDeviceGetCount, "cuDeviceGetCount"), "cuDeviceGetCount");
  need(bind(lib, d.cuDeviceGet, "cuDeviceGet"), "cuDeviceGet");
  need(bind(lib, d.cuDeviceGetName, "cuDeviceGetName"), "cuDeviceGetName");
  need(bind(lib, d.cuDeviceGetAttribute, "cuDeviceGetAttribute"), "cuDeviceGetAttribute");
  need(bind(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
       "cuDevicePrimaryCtxRetain");
  need(bind(lib, d.cuCtxSetCurrent, "cuCtxSetCurrent"), "cuCtxSetCurrent");
  need(bind(lib, d.cuCtxSynchronize, "cuCtxSynchronize"), "cuCtxSynchronize");
  need(bind(lib, d.cuModuleLoadDataEx, "cuModuleLoadDataEx"), "cuModuleLoadDataEx");
  need(bind(lib, d.cuModuleUnload, "cuModuleUnload"), "cuModuleUnload");
  need(bind(lib, d.cuModuleGetFunction, "cuModuleGetFunction"), "cuModuleGetFunction");
  need(bind(lib, d.cuFuncGetAttribute, "cuFuncGetAttribute"), "cuFuncGetAttribute");
  need(bind(lib, d.cuLaunchKernel, "cuLaunchKernel"), "cuLaunchKernel");
  need(bind(lib, d.cuMemAlloc, "cuMemAlloc_v2"), "cuMemAlloc_v2");
  need(bind(lib, d.cuMemFree, "cuMemFree_v2"), "cuMemFree_v2");
  need(bind(lib, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2"), "cuMemcpyHtoD_v2");
  need(bind(lib, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2"), "cuMemcpyDtoH_v2");
  need(bind(lib, d.cuMemsetD8, "cuMemsetD8_v2"), "cuMemsetD8_v2");
  need(bind(lib, d.cuEventCreate, "cuEventCreate"), "cuEventCreate");
  need(bind(lib, d.cuEventRecord, "cuEventRecord"), "cuEventRecord");
  need(bind(lib, d.cuEventSynchronize, "cuEventSynchronize"), "cuEventSynchronize");
  need(bind(lib, d.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
       "cuEventElapsedTime");
  need(bind(lib, d.cuEventDestroy, "cuEventDestroy_v2"), "cuEventDestroy_v2");
  need(bind(lib, d.cuGetErrorString, "cuGetErrorString"), "cuGetErrorString");
  if (missing) {
    l.why = std::string("libcuda.so.1 has no ") + missing + ": the driver is too old";
    return l;
  }
  int version = 0;
  if (d.cuDriverGetVersion(&version) != kSuccess || version < kMinDriverVersion) {
    l.why = "the CUDA driver is too old: version " + std::to_string(version / 1000) + "." +
            std::to_string(version % 1000 / 10) + ", wmtune needs 12.0 or newer";
    return l;
  }
  CUresult r = d.cuInit(0);
  if (r != kSuccess) {
    l.why = "the CUDA driver does not start (cuInit: " + d.errorText(r) +
            "): no usable GPU, or the driver and kernel module disagree";
    return l;
  }
  l.ok = true;
  return l;
}

} // namespace

const Driver* Driver::get(std::string* why) {
  static Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.d;
}

std::string Driver::errorText(CUresult r) const {
  const char* s = nullptr;
  if (cuGetErrorString && cuGetErrorString(r, &s) == kSuccess && s)
    return std::string(s) + " (" + std::to_string(r) + ")";
  return "CUDA error " + std::to_string(r);
}

bool probe(int ordinal, DeviceInfo* out, std::string* why) {
  const Driver* d = Driver::get(why);
  if (!d) return false;
  int count = 0;
  CUresult r = d->cuDeviceGetCount(&count);
  if (r != kSuccess || count == 0) {
    *why = r != kSuccess ? "cuDeviceGetCount: " + d->errorText(r) : "no CUDA device";
    return false;
  }
  if (ordinal < 0 || ordinal >= count) {
    *why = "no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(count) + " present)";
    return false;
  }
  CUdevice dev = 0;
  if ((r = d->cuDeviceGet(&dev, ordinal)) != kSuccess) {
    *why = "cuDeviceGet: " + d->errorText(r);
    return false;
  }
  char name[256] = {0};
  d->cuDeviceGetName(name, sizeof name - 1, dev);
  DeviceInfo info;
  info.name = name;
  auto attr = [&](int a) {
    int v = 0;
    d->cuDeviceGetAttribute(&v, a, dev);
    return v;
  };
  info.arch = "sm_" + std::to_string(attr(kMajor)) + std::to_string(attr(kMinor));
  info.sms = attr(kSmCount);
  info.maxThreadsPerBlock = attr(kMaxThreadsPerBlock);
  info.sharedBytesPerBlock = attr(kMaxSharedPerBlock);
  info.registersPerBlock = attr(kMaxRegistersPerBlock);
  info.warpSize = attr(kWarpSize);
  info.clockKhz = attr(kClockRate);
  info.memoryClockKhz = attr(kMemoryClockRate);
  info.busWidthBits = attr(kBusWidth);
  d->cuDriverGetVersion(&info.driverVersion);
  *out = info;
  return true;
}

} // namespace wm::runtime::cuda
