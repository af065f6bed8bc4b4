// The target of a command that runs kernels (see commands.h: runnableTarget).
#include "commands.h"

#include <wm/codegen/codegen.h>
#include <wm/runtime/cuda_driver.h>
#include <wm/runtime/measure.h>
#include <wm/support/error.h>

namespace wm::cli {

target::Target runnableTarget(const target::TargetOptions& opts) {
  if (opts.target != "cuda") return codegen::resolveTarget(opts);
  return runtime::cudaTarget(opts); // UserError: no usable device, and why
}

} // namespace wm::cli
