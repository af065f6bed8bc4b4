// LLVM modules of lowered functions: the target machine of a Target, the target's emitter, and
// the O3 pipeline. Shared by the JIT and object/assembly emission.
#pragma once

#include <wm/codegen/codegen.h>
#include <wm/lower/lower.h>
#include <wm/target/target.h>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>

namespace wm::codegen {

/// Registers LLVM's native target once per process.
void initLlvm();

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const target::Target& t);

struct BuiltModule {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> tm;
  /// CPU: the vector width LLVM's own vectorizers may use (bits; 0: LLVM's default, which
  /// is 256 on AVX-512 CPUs while explicit vectors use all 512).
  int preferVectorBits = 0;
};

/// An empty module for the target (UserError for a target without a code generator).
BuiltModule newModule(const std::string& name, const target::Target& t);
/// Verifies the module, then optimizes it when asked.
void finishModule(BuiltModule& m, bool optimize);

/// The module as LLVM IR text, assembly (PTX for NVPTX) or object bytes.
std::string emitModule(BuiltModule& m, EmitKind kind);

/// The module of f for the target, verified, and optimized when asked.
BuiltModule buildModule(const lower::LoweredFunc& f, const target::Target& t, bool optimize);

} // namespace wm::codegen
