// Emission of LLVM IR text, assembly or an object file (see codegen.h): of one kernel, or of an
// exported library's module (kernels, C entry points, function tables, constant data).
#include "cpu/cpu_emitter.h"
#include "module.h"

#include <wm/codegen/codegen.h>
#include <wm/rt/abi.h>
#include <wm/support/error.h>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/raw_ostream.h>

namespace wm::codegen {

std::string emitModule(BuiltModule& m, EmitKind kind) {
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

namespace {

/// int name(void* a0, ...): null and alignment checks, then kernel(args).
void emitCEntry(llvm::Module& m, const CEntry& e) {
  auto& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* ptrTy = llvm::PointerType::getUnqual(ctx);
  llvm::Function* kernel = m.getFunction(e.kernel);
  WM_CHECK(kernel) << "C entry " << e.name << ": no kernel " << e.kernel;
  std::vector<llvm::Type*> params(static_cast<size_t>(e.numArgs), ptrTy);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(b.getInt32Ty(), params, false),
                                    llvm::Function::ExternalLinkage, e.name, m);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* bad = llvm::BasicBlock::Create(ctx, "bad", fn);
  auto* run = llvm::BasicBlock::Create(ctx, "run", fn);
  b.SetInsertPoint(entry);
  llvm::Value* anyBad = b.getFalse();
  for (int i = 0; i < e.numArgs; ++i) {
    llvm::Value* addr = b.CreatePtrToInt(fn->getArg(i), b.getInt64Ty());
    // null, or not kBufferAlignment-aligned
    anyBad = b.CreateOr(anyBad, b.CreateICmpEQ(addr, b.getInt64(0)));
    anyBad =
        b.CreateOr(anyBad, b.CreateICmpNE(b.CreateAnd(addr, b.getInt64(rt::kBufferAlignment - 1)),
                                          b.getInt64(0)));
  }
  b.CreateCondBr(anyBad, bad, run);
  b.SetInsertPoint(bad);
  b.CreateRet(b.getInt32(1));
  b.SetInsertPoint(run);
  auto* arr =
      b.CreateAlloca(llvm::ArrayType::get(ptrTy, static_cast<uint64_t>(std::max(1, e.numArgs))));
  for (int i = 0; i < e.numArgs; ++i)
    b.CreateStore(fn->getArg(i), b.CreateConstInBoundsGEP2_64(arr->getAllocatedType(), arr, 0,
                                                              static_cast<uint64_t>(i)));
  b.CreateCall(kernel->getFunctionType(), kernel, {arr});
  b.CreateRet(b.getInt32(0));
}

} // namespace

std::string emit(const lower::LoweredFunc& f, const target::Target& target, EmitKind kind,
                 bool optimize) {
  BuiltModule m = buildModule(f, target, optimize);
  return emitModule(m, kind);
}

std::string emitLibrary(const LibraryModule& lib, const target::Target& target, EmitKind kind) {
  BuiltModule m = newModule(lib.name, target);
  auto& mod = *m.module;
  auto& ctx = *m.ctx;
  for (const auto& k : lib.kernels) {
    WM_CHECK(!mod.getFunction(k.name))
        << "library " << lib.name << ": kernel " << k.name << " twice";
    CpuEmitter(ctx, mod).emitKernel(k);
    mod.getFunction(k.name)->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  for (const auto& e : lib.entries) emitCEntry(mod, e);
  for (const auto& f : lib.forwarders) {
    llvm::IRBuilder<> b(ctx);
    auto* ty = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty()}, false);
    auto* fn = llvm::Function::Create(ty, llvm::Function::ExternalLinkage, f.name, mod);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
    b.CreateCall(mod.getOrInsertFunction(f.target, ty), {fn->getArg(0)});
    b.CreateRetVoid();
  }
  auto* ptrTy = llvm::PointerType::getUnqual(ctx);
  for (const auto& t : lib.tables) {
    std::vector<llvm::Constant*> fns;
    for (const auto& name : t.functions) {
      llvm::Function* f = mod.getFunction(name);
      WM_CHECK(f) << "function table " << t.name << ": no function " << name;
      fns.push_back(f);
    }
    auto* ty = llvm::ArrayType::get(ptrTy, fns.size());
    auto* g = new llvm::GlobalVariable(mod, ty, true, llvm::GlobalValue::ExternalLinkage,
                                       llvm::ConstantArray::get(ty, fns), t.name);
    g->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  for (const auto& d : lib.data) {
    auto* init =
        llvm::ConstantDataArray::getRaw(d.bytes, d.bytes.size(), llvm::Type::getInt8Ty(ctx));
    auto* g = new llvm::GlobalVariable(mod, init->getType(), true,
                                       llvm::GlobalValue::ExternalLinkage, init, d.name);
    g->setAlignment(llvm::Align(static_cast<uint64_t>(d.align)));
    g->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  for (const auto& p : lib.pointers) {
    llvm::Constant* pointee = llvm::ConstantPointerNull::get(ptrTy);
    if (!p.target.empty()) {
      auto* t = new llvm::GlobalVariable(mod, llvm::Type::getInt8Ty(ctx), true,
                                         llvm::GlobalValue::ExternalLinkage, nullptr, p.target);
      t->setVisibility(llvm::GlobalValue::HiddenVisibility);
      pointee = t;
    }
    auto* g = new llvm::GlobalVariable(mod, ptrTy, true, llvm::GlobalValue::ExternalLinkage,
                                       pointee, p.name);
    g->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  finishModule(m, true);
  return emitModule(m, kind);
}

} // namespace wm::codegen
