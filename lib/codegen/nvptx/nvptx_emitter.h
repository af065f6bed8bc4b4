// The NVIDIA GPU part of code generation: one PTX entry per kernel of a lower::GpuProgram
// (lower/gpu.h). Its parameters are the program's buffers (inputs, outputs, temporaries) as
// global-memory pointers; a thread-bound loop reads %ctaid/%tid (guarded when shorter than the
// launch), shared buffers are static addrspace(3) arrays, local ones per-thread allocas,
// barriers llvm.nvvm.barrier0; exp/log/tanh/erf/pow are built from the PTX approximations
// ex2/lg2 (no libdevice is needed). The launch shape is annotated (maxntid) for the register
// allocator.
#pragma once

#include "../emitter.h"

#include <wm/lower/gpu.h>

namespace wm::codegen {

class NvptxEmitter : public LoopEmitter {
public:
  using LoopEmitter::LoopEmitter;
  /// Emits kernel k of p into the module as a PTX entry named k.name.
  void emitKernel(const lower::GpuProgram& p, const lower::GpuKernel& k);

private:
  void parallelLoop(const lower::ForNode* n) override;
  void threadBoundLoop(const lower::ForNode* n) override;
  llvm::Value* allocateBuffer(const ir::Buffer& buf, int64_t bytes, bool* release) override;
  void freeBuffer(llvm::Value* ptr) override;
  void barrier() override;
  llvm::Value* mathCall(ir::MathFunc f, llvm::Value* a, llvm::Value* b) override;

  llvm::Value* scalarMath(ir::MathFunc f, llvm::Value* a, llvm::Value* b);
  llvm::Value* exp2(llvm::Value* x);
  llvm::Value* log2(llvm::Value* x);

  const lower::GpuKernel* kernel_ = nullptr;
};

} // namespace wm::codegen
