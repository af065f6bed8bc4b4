// PTX of a GPU program (codegen.h: emitGpu): one NVPTX module, a kernel entry per kernel of the
// program, optimized with the NVPTX target machine's O3 pipeline, printed by LLVM's NVPTX
// backend.
#include "../module.h"
#include "nvptx_emitter.h"

#include <wm/codegen/codegen.h>
#include <wm/support/error.h>

namespace wm::codegen {

lower::GpuLaunchLimits gpuLaunchLimits(const target::Target& t) {
  lower::GpuLaunchLimits limits;
  limits.maxThreadsPerBlock = t.gpu.maxThreadsPerBlock;
  limits.sharedBytesPerBlock = t.gpu.sharedBytesPerBlock;
  return limits;
}

std::string emitGpu(const lower::GpuProgram& p, const target::Target& t, EmitKind kind,
                    bool optimize) {
  if (!t.isGpu())
    throw UserError(std::string("emitGpu: target ") + target::kindName(t.kind) + " is not a GPU");
  if (kind == EmitKind::Object)
    throw UserError("a GPU program is emitted as PTX or LLVM IR, not as an object file");
  BuiltModule m = newModule(p.func.name, t);
  for (const auto& k : p.kernels) NvptxEmitter(*m.ctx, *m.module).emitKernel(p, k);
  finishModule(m, optimize);
  return emitModule(m, kind);
}

} // namespace wm::codegen
