// Code generation: lowered loop nests to LLVM IR, optimized for the target, then JIT-compiled
// in process or emitted as LLVM IR, assembly or an object file. The layers (docs/architecture.md):
//   emitter.h            target-neutral loop-nest -> LLVM IR, with hooks
//   cpu/cpu_emitter.h    the CPU's hooks and the kernel ABI of rt/abi.h
//   module.h             target machine, module building, the O3 pipeline
//   jit.cpp, object.cpp  the JIT and object/assembly emission, apart from both
//
// How loops are lowered: a vectorized loop whose body is straight-line stores becomes explicit
// vector code (contiguous accesses as vector loads/stores, others lane by lane); one with
// guards or inner loops is left to LLVM's loop vectorizer. Unrolled loops get
// llvm.loop.unroll.full, loops under an auto_unroll_max_step pragma are fully unrolled when
// their whole nest has at most that many steps; a parallel loop becomes an outlined function
// run by wm_parallel_for (one call per parallel region). Float arithmetic may be contracted
// into FMAs.
//
// How to add a target: docs/contributing.md ("A target").
#pragma once

#include <wm/lower/lower.h>
#include <wm/target/target.h>

#include <memory>
#include <string>

namespace wm::codegen {

/// This machine's CPU (mcpu empty) or the named one, as LLVM knows it: triple, CPU name,
/// features (mattr when given) and vector width. UserError for a CPU LLVM does not know.
target::CpuDescription describeCpu(const std::string& mcpu = "", const std::string& mattr = "");

/// The target the options ask for (the one place a Target is made from flags).
target::Target resolveTarget(const target::TargetOptions& opts);

enum class EmitKind { LlvmIr, Assembly, Object };

/// Optimized (unless optimize=false) LLVM IR text, assembly text, or object file bytes.
std::string emit(const lower::LoweredFunc& f, const target::Target& target, EmitKind kind,
                 bool optimize = true);

/// A kernel compiled in process (the kernel ABI of rt/abi.h).
class JitKernel {
public:
  virtual ~JitKernel() = default;
  virtual void call(void** args) const = 0;
  static std::unique_ptr<JitKernel> compile(const lower::LoweredFunc& f,
                                            const target::Target& target);
};

} // namespace wm::codegen
