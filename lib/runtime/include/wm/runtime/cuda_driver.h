// The CUDA driver API, loaded at run time (dlopen("libcuda.so.1")): the one binary runs on
// machines without a driver, where every CPU command keeps working and `--target cuda` on
// commands that run kernels says why it cannot (no libcuda.so.1, no device, driver too old).
// The types are the driver's ABI, declared here so that building needs no CUDA headers; this
// file and cuda_driver.cpp use only the C++ standard library and libdl, so device-side tools
// (benchmarks/gpu/) compile them on their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wm::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

/// The entry points wmtune uses, resolved from libcuda.so.1.
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuGetErrorString)(CUresult, const char**);

  /// The driver, loaded and initialized once per process; null with *why when it cannot be.
  static const Driver* get(std::string* why);
  /// "CUDA_ERROR_...: message" of a result.
  std::string errorText(CUresult r) const;
};

/// Ansor's hardware parameters and the world model's GPU features, as the driver reports them.
struct DeviceInfo {
  std::string name;
  std::string arch; ///< sm_XY
  int sms = 0, maxThreadsPerBlock = 0, sharedBytesPerBlock = 0, registersPerBlock = 0;
  int warpSize = 0, clockKhz = 0, memoryClockKhz = 0, busWidthBits = 0, driverVersion = 0;
};

/// The oldest driver wmtune's PTX loads on (CUDA 12.0: PTX ISA 8.0 for sm_90).
constexpr int kMinDriverVersion = 12000;

/// Device `ordinal` (driver loaded, version new enough, device present); false with *why.
bool probe(int ordinal, DeviceInfo* out, std::string* why);

} // namespace wm::runtime::cuda
