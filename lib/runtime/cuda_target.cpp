// The cuda target of this machine's GPU (see measure.h: cudaTarget).
#include <wm/runtime/cuda_driver.h>
#include <wm/runtime/measure.h>
#include <wm/support/error.h>

namespace wm::runtime {

target::Target cudaTarget(const target::TargetOptions& opts, cuda::DeviceInfo* info) {
  cuda::DeviceInfo dev;
  std::string why;
  if (!cuda::probe(0, &dev, &why)) throw UserError("--target cuda: " + why);
  target::Target t = target::gpuTarget(opts.arch.empty() ? dev.arch : opts.arch);
  t.gpu.sms = dev.sms;
  t.gpu.maxThreadsPerBlock = dev.maxThreadsPerBlock;
  t.gpu.warpSize = dev.warpSize;
  t.gpu.maxVthread = dev.warpSize / 4;
  t.gpu.sharedBytesPerBlock = dev.sharedBytesPerBlock;
  t.gpu.registersPerBlock = dev.registersPerBlock;
  t.gpu.device = dev.name;
  t.ghz = dev.clockKhz * 1e-6;
  if (info) *info = dev;
  return t;
}

} // namespace wm::runtime
