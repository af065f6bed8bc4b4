// The CPU emitter (see cpu_emitter.h).
#include "cpu_emitter.h"

#include <wm/rt/abi.h>
#include <wm/support/error.h>

namespace wm::codegen {

using namespace wm::ir;
using namespace wm::lower;

void CpuEmitter::emitKernel(const LoweredFunc& f) {
  std::vector<Buffer> args(f.inputs);
  args.insert(args.end(), f.outputs.begin(), f.outputs.end());
  auto* ptrTy = llvm::PointerType::getUnqual(ctx_);
  std::vector<llvm::Type*> params(args.size(), ptrTy);
  auto* implTy = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  auto* impl =
      llvm::Function::Create(implTy, llvm::Function::InternalLinkage, f.name + "_impl", m_);
  for (size_t i = 0; i < args.size(); ++i) {
    impl->addParamAttr(i, llvm::Attribute::NoAlias);
    impl->addParamAttr(i,
                       llvm::Attribute::getWithAlignment(ctx_, llvm::Align(rt::kBufferAlignment)));
    impl->getArg(i)->setName(args[i]->name);
  }
  impl->addFnAttr(llvm::Attribute::NoUnwind);
  beginFunction(impl);
  for (size_t i = 0; i < args.size(); ++i) env_.bufs.bind(args[i].get(), impl->getArg(i));
  stmt(f.body);
  b_.CreateRetVoid();

  // The exported wrapper: NAME(void** args).
  auto* wrapTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy}, false);
  auto* wrap = llvm::Function::Create(wrapTy, llvm::Function::ExternalLinkage, f.name, m_);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", wrap));
  std::vector<llvm::Value*> callArgs;
  for (size_t i = 0; i < args.size(); ++i) {
    auto* slot = b_.CreateConstGEP1_64(ptrTy, wrap->getArg(0), i);
    callArgs.push_back(b_.CreateLoad(ptrTy, slot, args[i]->name));
  }
  b_.CreateCall(impl, callArgs);
  b_.CreateRetVoid();
}

// A GPU schedule given to the CPU (a user's schedule file, a log of another target): the
// user's mistake, not an internal error.
void CpuEmitter::threadBoundLoop(const ForNode* n) {
  throw UserError("loop " + n->var.name() + " is bound to " + n->threadTag +
                  ": a GPU schedule; the CPU cannot run it (use --target cuda)");
}

llvm::Value* CpuEmitter::allocateBuffer(const Buffer& buf, int64_t bytes, bool* release) {
  if (bytes <= rt::kMaxStackBufferBytes) {
    llvm::IRBuilder<> entry(allocaPoint_, allocaPoint_->begin());
    auto* a = entry.CreateAlloca(typeOf(buf->dtype, true), entry.getInt64(buf->allocElements()),
                                 buf->name);
    a->setAlignment(llvm::Align(rt::kBufferAlignment));
    *release = false;
    return a;
  }
  auto* allocFn = llvm::cast<llvm::Function>(
      m_.getOrInsertFunction(rt::kAllocSymbol, llvm::PointerType::getUnqual(ctx_), b_.getInt64Ty())
          .getCallee());
  // Fresh memory: it aliases nothing else, so its accesses can be kept in registers.
  allocFn->addRetAttr(llvm::Attribute::NoAlias);
  allocFn->addRetAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(rt::kBufferAlignment)));
  *release = true;
  return b_.CreateCall(allocFn, {b_.getInt64(bytes)}, buf->name);
}

void CpuEmitter::freeBuffer(llvm::Value* ptr) {
  auto freeFn =
      m_.getOrInsertFunction(rt::kFreeSymbol, b_.getVoidTy(), llvm::PointerType::getUnqual(ctx_));
  b_.CreateCall(freeFn, {ptr});
}

// Outlines the loop body into fn(i64 i, ptr closure); the closure holds every value of the
// environment, in the environment's order (first binding first: deterministic).
void CpuEmitter::parallelLoop(const ForNode* n) {
  auto* ptrTy = llvm::PointerType::getUnqual(ctx_);
  auto vars = env_.vars.items();
  auto bufs = env_.bufs.items();
  std::vector<llvm::Type*> fields;
  for (size_t k = 0; k < vars.size(); ++k) fields.push_back(b_.getInt64Ty());
  for (size_t k = 0; k < bufs.size(); ++k) fields.push_back(ptrTy);
  auto* closureTy = llvm::StructType::get(ctx_, fields);
  llvm::IRBuilder<> entry(allocaPoint_, allocaPoint_->begin());
  auto* closure = entry.CreateAlloca(closureTy, nullptr, "closure");
  for (size_t k = 0; k < vars.size(); ++k)
    b_.CreateStore(vars[k].second, b_.CreateStructGEP(closureTy, closure, k));
  for (size_t k = 0; k < bufs.size(); ++k)
    b_.CreateStore(bufs[k].second, b_.CreateStructGEP(closureTy, closure, vars.size() + k));

  // body(i, closure) unpacks the closure and calls inner(i, vars..., buffers...), whose buffer
  // parameters are noalias (distinct buffers never overlap); inner is inlined into body, and
  // the noalias facts survive as scoped alias metadata, so the loop keeps the same
  // optimizations (e.g. accumulators in registers) as outside a parallel region.
  std::vector<llvm::Type*> innerParams{b_.getInt64Ty()};
  for (size_t k = 0; k < vars.size(); ++k) innerParams.push_back(b_.getInt64Ty());
  for (size_t k = 0; k < bufs.size(); ++k) innerParams.push_back(ptrTy);
  auto* innerTy = llvm::FunctionType::get(b_.getVoidTy(), innerParams, false);
  auto* inner = llvm::Function::Create(innerTy, llvm::Function::InternalLinkage,
                                       fn_->getName() + "_par_" + n->var.name() + "_inner", m_);
  inner->addFnAttr(llvm::Attribute::NoUnwind);
  inner->addFnAttr(llvm::Attribute::AlwaysInline);
  for (size_t k = 0; k < bufs.size(); ++k)
    inner->addParamAttr(1 + vars.size() + k, llvm::Attribute::NoAlias);
  auto* bodyTy = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt64Ty(), ptrTy}, false);
  auto* body = llvm::Function::Create(bodyTy, llvm::Function::InternalLinkage,
                                      fn_->getName() + "_par_" + n->var.name(), m_);
  body->addFnAttr(llvm::Attribute::NoUnwind);
  // Save the emission context, emit both functions, restore.
  auto* savedFn = fn_;
  auto* savedAlloca = allocaPoint_;
  auto savedIp = b_.saveIP();
  Env savedEnv = env_;
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body));
  std::vector<llvm::Value*> innerArgs{body->getArg(0)};
  for (size_t k = 0; k < vars.size(); ++k)
    innerArgs.push_back(
        b_.CreateLoad(b_.getInt64Ty(), b_.CreateStructGEP(closureTy, body->getArg(1), k)));
  for (size_t k = 0; k < bufs.size(); ++k)
    innerArgs.push_back(
        b_.CreateLoad(ptrTy, b_.CreateStructGEP(closureTy, body->getArg(1), vars.size() + k)));
  b_.CreateCall(inner, innerArgs);
  b_.CreateRetVoid();
  beginFunction(inner);
  env_ = Env();
  for (size_t k = 0; k < vars.size(); ++k) env_.vars.bind(vars[k].first, inner->getArg(1 + k));
  for (size_t k = 0; k < bufs.size(); ++k)
    env_.bufs.bind(bufs[k].first, inner->getArg(1 + vars.size() + k));
  env_.vars.bind(n->var.node(), inner->getArg(0));
  stmt(n->body);
  b_.CreateRetVoid();
  fn_ = savedFn;
  allocaPoint_ = savedAlloca;
  b_.restoreIP(savedIp);
  env_ = savedEnv;
  auto callee =
      m_.getOrInsertFunction(rt::kParallelForSymbol, b_.getVoidTy(), b_.getInt64Ty(), ptrTy, ptrTy);
  b_.CreateCall(callee, {b_.getInt64(n->extent), body, closure});
}

} // namespace wm::codegen
