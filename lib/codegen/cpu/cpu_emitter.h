// The CPU part of code generation: the kernel ABI of rt/abi.h (an exported NAME(void** args)
// wrapping an internal function with one noalias, aligned pointer per buffer), parallel loops
// outlined and run by wm_parallel_for, temporaries on the stack or from wm_alloc. A
// thread-bound loop reaching it (a GPU schedule) is a UserError.
#pragma once

#include "../emitter.h"

namespace wm::codegen {

class CpuEmitter : public LoopEmitter {
public:
  using LoopEmitter::LoopEmitter;
  /// Emits the kernel of f into the module.
  void emitKernel(const lower::LoweredFunc& f);

private:
  void parallelLoop(const lower::ForNode* n) override;
  void threadBoundLoop(const lower::ForNode* n) override;
  llvm::Value* allocateBuffer(const ir::Buffer& buf, int64_t bytes, bool* release) override;
  void freeBuffer(llvm::Value* ptr) override;
  bool vectorizeUnrolledLoops() const override { return true; }
};

} // namespace wm::codegen
