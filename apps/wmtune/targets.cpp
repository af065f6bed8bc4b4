// The target of a command that runs kernels (see commands.h: runnableTarget).
#include "commands.h"

#include <wm/codegen/codegen.h>
#include <wm/runtime/cuda_driver.h>
#include <wm/runtime/measure.h>
#include <wm/support/error.h>

namespace wm::cli {

target::Target runnableTarget(const target::TargetOptions& opts, const std::string& command) {
  if (opts.target != "cuda") return codegen::resolveTarget(opts);
  runtime::cuda::DeviceInfo dev;
  target::Target t = runtime::cudaTarget(opts, &dev); // UserError: no usable device, and why
  WM_USER_ERROR() << "--target cuda: found " << dev.name << " (" << dev.arch << ", " << dev.sms
                  << " SMs), but `wmtune " << command
                  << "` does not run kernels on GPUs in this build yet; `wmtune compile --target "
                     "cuda --emit ptx` emits them (docs/gpu.md)";
  return t;
}

} // namespace wm::cli
