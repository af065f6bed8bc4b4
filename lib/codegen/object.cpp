// Emission of LLVM IR text, assembly or an object file (see codegen.h).
#include "module.h"

#include <wm/codegen/codegen.h>
#include <wm/support/error.h>

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/raw_ostream.h>

namespace wm::codegen {

std::string emit(const lower::LoweredFunc& f, const target::Target& target, EmitKind kind,
                 bool optimize) {
  BuiltModule m = buildModule(f, target, optimize);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (kind == EmitKind::LlvmIr) {
    m.module->print(os, nullptr);
    return os.str();
  }
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream vs(buf);
  llvm::legacy::PassManager pm;
  auto type = kind == EmitKind::Assembly ? llvm::CodeGenFileType::AssemblyFile
                                         : llvm::CodeGenFileType::ObjectFile;
  WM_CHECK(!m.tm->addPassesToEmitFile(pm, vs, nullptr, type))
      << "the target cannot emit this file type";
  pm.run(*m.module);
  return std::string(buf.begin(), buf.end());
}

} // namespace wm::codegen
