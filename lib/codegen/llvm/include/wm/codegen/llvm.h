// CPU backend: lowered loop nests to LLVM IR, optimized for the host (or a chosen) CPU, then
// JIT-compiled in process or emitted as LLVM IR, assembly or an object file.
//
// Kernel ABI: `void NAME(void** args)`, one pointer per buffer, inputs then outputs (the order
// of LoweredFunc), each 64-byte aligned. f32 buffers hold float, f16 _Float16, i32/i64 ints,
// bool one byte per element.
//
// How loops are lowered: a vectorized loop whose body is straight-line stores becomes explicit
// vector code (contiguous accesses as vector loads/stores, others lane by lane); one with
// guards or inner loops is left to LLVM's loop vectorizer. Unrolled loops get
// llvm.loop.unroll.full, loops under an
// auto_unroll_max_step pragma are fully unrolled when their whole nest has at most that many
// steps; a parallel loop becomes an outlined function run by wm_parallel_for (one call per
// parallel region). Buffers of up to 64 KiB are stack allocations, larger ones wm_alloc.
// Float arithmetic may be contracted into FMAs.
#pragma once

#include <wm/lower/lower.h>

#include <memory>
#include <string>

namespace wm::codegen {

struct CpuTarget {
  std::string triple;
  std::string cpu;      ///< e.g. "znver4"
  std::string features; ///< e.g. "+avx512f,+fma,..."
  /// This machine's CPU name and features; `cpu`/`attrs` override them when non-empty.
  static CpuTarget host(const std::string& cpu = "", const std::string& attrs = "");
};

enum class EmitKind { LlvmIr, Assembly, Object };

/// Optimized (unless optimize=false) LLVM IR text, assembly text, or object file bytes.
std::string emit(const lower::LoweredFunc& f, const CpuTarget& target, EmitKind kind,
                 bool optimize = true);

/// A kernel compiled in process.
class JitKernel {
public:
  virtual ~JitKernel() = default;
  virtual void call(void** args) const = 0;
  static std::unique_ptr<JitKernel> compile(const lower::LoweredFunc& f, const CpuTarget& target);
};

} // namespace wm::codegen
