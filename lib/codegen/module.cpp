// Module building (see module.h): the target machine, the target's emitter, verification, and
// the O3 pipeline with the TargetMachine given to the PassBuilder (without it the loop
// vectorizer sees no vector registers).
#include "module.h"

#include "cpu/cpu_emitter.h"

#include <wm/support/error.h>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

namespace wm::codegen {

void initLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const target::Target& t) {
  initLlvm();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) throw UserError("LLVM target " + t.triple + ": " + err);
  llvm::TargetOptions opts;
  opts.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  const bool gpu = t.isGpu();
  // NVPTX: the SM version is the target CPU; LLVM picks the PTX version that it needs.
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(t.triple, gpu ? t.gpu.arch : t.cpu, gpu ? "" : t.features, opts,
                                  gpu ? std::optional<llvm::Reloc::Model>() : llvm::Reloc::PIC_,
                                  std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    throw UserError("cannot create a target machine for " +
                    (gpu ? "arch '" + t.gpu.arch + "'" : "cpu '" + t.cpu + "'"));
  return tm;
}

namespace {

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  auto mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

} // namespace

BuiltModule newModule(const std::string& name, const target::Target& t) {
  BuiltModule out;
  out.tm = makeTargetMachine(t);
  out.ctx = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>(name, *out.ctx);
  out.module->setTargetTriple(t.triple);
  out.module->setDataLayout(out.tm->createDataLayout());
  if (!t.isGpu()) out.preferVectorBits = t.vectorBytes * 8;
  return out;
}

void finishModule(BuiltModule& m, bool optimizeIt) {
  std::string err;
  llvm::raw_string_ostream es(err);
  WM_CHECK(!llvm::verifyModule(*m.module, &es)) << "codegen produced invalid LLVM IR: " << es.str();
  if (m.preferVectorBits > 0)
    for (llvm::Function& f : *m.module)
      if (!f.isDeclaration())
        f.addFnAttr("prefer-vector-width", std::to_string(m.preferVectorBits));
  if (optimizeIt) optimize(*m.module, *m.tm);
}

BuiltModule buildModule(const lower::LoweredFunc& f, const target::Target& t, bool optimizeIt) {
  if (t.isGpu())
    throw UserError("a GPU target's kernels are emitted with codegen::emitGpu (PTX), not as CPU "
                    "code");
  BuiltModule out = newModule(f.name, t);
  CpuEmitter(*out.ctx, *out.module).emitKernel(f);
  finishModule(out, optimizeIt);
  return out;
}

} // namespace wm::codegen
