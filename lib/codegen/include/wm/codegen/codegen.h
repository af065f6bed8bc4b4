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

#include <wm/lower/gpu.h>
#include <wm/lower/lower.h>
#include <wm/target/target.h>

#include <memory>
#include <string>
#include <vector>

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

/// The launch limits of a cuda target (its threads and shared memory per block).
lower::GpuLaunchLimits gpuLaunchLimits(const target::Target& target);

/// The kernels of a GPU program for a cuda target, as PTX (EmitKind::Assembly) or LLVM IR (the
/// NVPTX module, optimized unless optimize=false); one entry per kernel, named as the kernel.
std::string emitGpu(const lower::GpuProgram& p, const target::Target& target, EmitKind kind,
                    bool optimize = true);

/// A C entry point of an exported library: `int name(void* a0, ..., void* aN-1)` checks that
/// every pointer is non-null and kBufferAlignment-aligned (returns 1 when one is not, 0 after
/// calling the kernel), then calls `kernel(void** args)`.
struct CEntry {
  std::string name;
  std::string kernel;
  int numArgs = 0;
};

/// Constant bytes as a global symbol of an object (exported libraries' weights and plans).
struct DataSymbol {
  std::string name;
  std::string bytes;
  int64_t align = 64;
};

/// A constant pointer to a hidden symbol of another object of the library (null when target is
/// empty): a strong reference, so a static archive's member that defines target is linked.
struct PointerSymbol {
  std::string name;
  std::string target;
};

/// A global array of pointers to the named functions (void (*name[])(void**)).
struct FunctionTable {
  std::string name;
  std::vector<std::string> functions;
};

/// `void name(int n)` calling the runtime's `void target(int n)` (a library's own name for a
/// runtime setting such as its thread count).
struct Forwarder {
  std::string name;
  std::string target;
};

/// The code of an exported library: kernels (names unique), their C entry points, function
/// tables, and constant data. Every symbol but the C entries and tables is local to the object
/// or hidden, so two libraries' kernels never clash.
struct LibraryModule {
  std::string name;
  std::vector<lower::LoweredFunc> kernels;
  std::vector<CEntry> entries;
  std::vector<Forwarder> forwarders;
  std::vector<FunctionTable> tables;
  std::vector<DataSymbol> data;
  std::vector<PointerSymbol> pointers;
};

/// One module of the library (optimized), as the EmitKind asks.
std::string emitLibrary(const LibraryModule& lib, const target::Target& target, EmitKind kind);

/// A kernel compiled in process (the kernel ABI of rt/abi.h).
class JitKernel {
public:
  virtual ~JitKernel() = default;
  virtual void call(void** args) const = 0;
  static std::unique_ptr<JitKernel> compile(const lower::LoweredFunc& f,
                                            const target::Target& target);
};

} // namespace wm::codegen
