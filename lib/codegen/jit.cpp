// The JIT (see codegen.h): ORC LLJIT on an optimized module, with the kernel ABI's runtime
// symbols (rt/abi.h) defined absolutely and libm found in the process.
#include "module.h"

#include <wm/codegen/codegen.h>
#include <wm/rt/abi.h>
#include <wm/support/error.h>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/TargetParser/SubtargetFeature.h>

namespace wm::codegen {

namespace {

class LlJitKernel : public JitKernel {
public:
  LlJitKernel(std::unique_ptr<llvm::orc::LLJIT> jit, void (*fn)(void**))
      : jit_(std::move(jit)), fn_(fn) {}
  void call(void** args) const override { fn_(args); }

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  void (*fn_)(void**);
};

} // namespace

std::unique_ptr<JitKernel> JitKernel::compile(const lower::LoweredFunc& f,
                                              const target::Target& target) {
  BuiltModule m = buildModule(f, target, true);
  auto jtmb = llvm::orc::JITTargetMachineBuilder(llvm::Triple(target.triple));
  jtmb.setCPU(target.cpu);
  if (!target.features.empty()) {
    llvm::SubtargetFeatures feats(target.features);
    jtmb.addFeatures(feats.getFeatures());
  }
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  jtmb.getOptions().AllowFPOpFusion = llvm::FPOpFusion::Fast;
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit) throw InternalError("LLJIT: " + llvm::toString(jit.takeError()));
  auto& dylib = (*jit)->getMainJITDylib();
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) throw InternalError("LLJIT: " + llvm::toString(gen.takeError()));
  dylib.addGenerator(std::move(*gen));
  auto& es = (*jit)->getExecutionSession();
  llvm::orc::SymbolMap rtSymbols;
  auto def = [&](const char* name, void* addr) {
    rtSymbols[es.intern(name)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                                  llvm::JITSymbolFlags::Exported};
  };
  def(rt::kParallelForSymbol, reinterpret_cast<void*>(&wm_parallel_for));
  def(rt::kAllocSymbol, reinterpret_cast<void*>(&wm_alloc));
  def(rt::kFreeSymbol, reinterpret_cast<void*>(&wm_free));
  if (auto err = dylib.define(llvm::orc::absoluteSymbols(std::move(rtSymbols))))
    throw InternalError("LLJIT: " + llvm::toString(std::move(err)));
  if (auto err =
          (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(m.module), std::move(m.ctx))))
    throw InternalError("LLJIT: " + llvm::toString(std::move(err)));
  auto sym = (*jit)->lookup(f.name);
  if (!sym)
    throw InternalError("LLJIT lookup of " + f.name + ": " + llvm::toString(sym.takeError()));
  auto* fn = sym->toPtr<void (*)(void**)>();
  return std::make_unique<LlJitKernel>(std::move(*jit), fn);
}

} // namespace wm::codegen
