// CPU descriptions from LLVM (see codegen.h: describeCpu, resolveTarget).
#include "../module.h"

#include <wm/codegen/codegen.h>
#include <wm/support/error.h>
#include <wm/support/strings.h>

#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace wm::codegen {

target::CpuDescription describeCpu(const std::string& mcpu, const std::string& mattr) {
  initLlvm();
  target::CpuDescription d;
  d.triple = llvm::sys::getProcessTriple();
  d.cpu = mcpu.empty() ? llvm::sys::getHostCPUName().str() : mcpu;
  if (!mattr.empty()) {
    d.features = mattr;
  } else if (mcpu.empty()) {
    std::vector<std::string> feats;
    for (auto& kv : llvm::sys::getHostCPUFeatures())
      feats.push_back((kv.second ? "+" : "-") + kv.first().str());
    std::sort(feats.begin(), feats.end());
    for (size_t i = 0; i < feats.size(); ++i) d.features += (i ? "," : "") + feats[i];
  }
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(d.triple, err);
  if (!t) throw UserError("LLVM target " + d.triple + ": " + err);
  // Names are checked against a generic subtarget first: LLVM only warns about unknown ones
  // (and later aborts on some), so they never reach it.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(t->createMCSubtargetInfo(d.triple, "", ""));
  if (!generic) throw UserError("LLVM target " + d.triple + ": no subtarget information");
  if (!generic->isCPUStringValid(d.cpu))
    throw UserError("--mcpu " + d.cpu + ": not a CPU LLVM knows for " + d.triple +
                    " (see `llc -mcpu=help`)");
  if (!mattr.empty()) {
    auto known = generic->getAllProcessorFeatures();
    for (const std::string& f : split(mattr, ',')) {
      if (f.empty()) continue;
      std::string name = (f[0] == '+' || f[0] == '-') ? f.substr(1) : "";
      bool ok = !name.empty() && std::any_of(known.begin(), known.end(),
                                             [&](const auto& kv) { return name == kv.Key; });
      if (!ok)
        throw UserError("--mattr " + f + ": not a feature LLVM knows for " + d.triple +
                        " (write +name or -name, e.g. +avx2,+fma)");
    }
  }
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t->createMCSubtargetInfo(d.triple, d.cpu, d.features));
  if (!sti) throw UserError("--mcpu " + d.cpu + ": LLVM has no subtarget for it");
  d.vectorBytes = sti->checkFeatures("+avx512f") ? 64 : sti->checkFeatures("+avx") ? 32 : 16;
  return d;
}

target::Target resolveTarget(const target::TargetOptions& opts) {
  if (opts.target == "cuda") return target::gpuTarget(opts.arch.empty() ? "sm_90" : opts.arch);
  if (opts.target != "llvm")
    WM_USER_ERROR() << "--target " << opts.target << ": not a target kind (llvm, cuda)";
  if (!opts.arch.empty()) WM_USER_ERROR() << "--arch " << opts.arch << ": only for --target cuda";
  return target::makeCpuTarget(describeCpu(opts.mcpu, opts.mattr), opts);
}

} // namespace wm::codegen
