// The NVPTX emitter (see nvptx_emitter.h).
#include "nvptx_emitter.h"

#include <wm/support/error.h>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cmath>

namespace wm::codegen {

using namespace wm::ir;
using namespace wm::lower;

namespace {
constexpr unsigned kGlobalSpace = 1, kSharedSpace = 3;
} // namespace

void NvptxEmitter::emitKernel(const lower::GpuProgram& p, const lower::GpuKernel& k) {
  kernel_ = &k;
  auto params = p.params();
  auto* globalPtr = llvm::PointerType::get(ctx_, kGlobalSpace);
  std::vector<llvm::Type*> types(params.size(), globalPtr);
  auto* fnTy = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  auto* fn = llvm::Function::Create(fnTy, llvm::Function::ExternalLinkage, k.name, m_);
  for (size_t i = 0; i < params.size(); ++i) {
    fn->addParamAttr(i, llvm::Attribute::NoAlias);
    // Inputs are never written: loads through the read-only data cache (ld.global.nc).
    if (i < p.func.inputs.size()) fn->addParamAttr(i, llvm::Attribute::ReadOnly);
    fn->getArg(i)->setName(params[i]->name);
  }
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  beginFunction(fn);
  for (size_t i = 0; i < params.size(); ++i) env_.bufs.bind(params[i].get(), fn->getArg(i));
  stmt(k.body);
  b_.CreateRetVoid();
  // A kernel entry, with its block shape for the register allocator.
  auto* annotations = m_.getOrInsertNamedMetadata("nvvm.annotations");
  auto add = [&](const char* key, int64_t v) {
    llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx_, key),
                            llvm::ValueAsMetadata::get(b_.getInt32(static_cast<uint32_t>(v)))};
    annotations->addOperand(llvm::MDNode::get(ctx_, md));
  };
  add("kernel", 1);
  add("maxntidx", k.block[0]);
  add("maxntidy", k.block[1]);
  add("maxntidz", k.block[2]);
  kernel_ = nullptr;
}

void NvptxEmitter::parallelLoop(const ForNode* n) {
  WM_CHECK(false) << "codegen: loop " << n->var.name()
                  << " is a CPU parallel loop; the GPU code generator cannot run it";
}

// The loop's variable is the block's or thread's index along the tag's dimension; the body is
// guarded when the loop is shorter than that launch dimension.
void NvptxEmitter::threadBoundLoop(const ForNode* n) {
  WM_CHECK(kernel_) << "codegen: a thread-bound loop outside a kernel";
  const std::string& tag = n->threadTag;
  bool block = tag.rfind("blockIdx.", 0) == 0;
  int d = tag.back() - 'x';
  WM_CHECK((block || tag.rfind("threadIdx.", 0) == 0) && d >= 0 && d < 3)
      << "codegen: thread tag '" << tag << "' (vthreads are loops after splitKernels)";
  static const llvm::Intrinsic::ID ctaid[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                              llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                              llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
  static const llvm::Intrinsic::ID tid[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x,
                                            llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y,
                                            llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z};
  llvm::Value* idx = b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, block ? ctaid[d] : tid[d]),
                                   {}, n->var.name());
  idx = b_.CreateZExt(idx, b_.getInt64Ty());
  int64_t launched = block ? kernel_->grid[d] : kernel_->block[d];
  env_.vars.bind(n->var.node(), idx);
  if (n->extent >= launched) {
    stmt(n->body);
  } else {
    auto* bodyBB = llvm::BasicBlock::Create(ctx_, "bound", fn_);
    auto* join = llvm::BasicBlock::Create(ctx_, "unbound", fn_);
    b_.CreateCondBr(b_.CreateICmpULT(idx, b_.getInt64(n->extent)), bodyBB, join);
    b_.SetInsertPoint(bodyBB);
    stmt(n->body);
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }
  env_.vars.erase(n->var.node());
}

llvm::Value* NvptxEmitter::allocateBuffer(const Buffer& buf, int64_t bytes, bool* release) {
  *release = false;
  llvm::Type* elem = typeOf(buf->dtype, true);
  if (buf->scope == MemScope::Shared) {
    auto* arr = llvm::ArrayType::get(elem, static_cast<uint64_t>(buf->allocElements()));
    auto* g = new llvm::GlobalVariable(m_, arr, false, llvm::GlobalValue::InternalLinkage,
                                       llvm::UndefValue::get(arr), fn_->getName() + "." + buf->name,
                                       nullptr, llvm::GlobalValue::NotThreadLocal, kSharedSpace);
    g->setAlignment(llvm::Align(16));
    return g;
  }
  WM_CHECK(buf->scope == MemScope::Local)
      << "codegen: buffer " << buf->name << " (" << memScopeName(buf->scope)
      << ") inside a GPU kernel; splitKernels allows shared and local ones only";
  (void)bytes;
  llvm::IRBuilder<> entry(allocaPoint_, allocaPoint_->begin());
  auto* a = entry.CreateAlloca(elem, entry.getInt64(buf->allocElements()), buf->name);
  a->setAlignment(llvm::Align(16));
  return a;
}

void NvptxEmitter::freeBuffer(llvm::Value*) {}

void NvptxEmitter::barrier() {
  b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_barrier0), {});
}

llvm::Value* NvptxEmitter::exp2(llvm::Value* x) {
  bool d = x->getType()->isDoubleTy();
  return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, d ? llvm::Intrinsic::nvvm_ex2_approx_d
                                                              : llvm::Intrinsic::nvvm_ex2_approx_f),
                       {x});
}

llvm::Value* NvptxEmitter::log2(llvm::Value* x) {
  bool d = x->getType()->isDoubleTy();
  return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, d ? llvm::Intrinsic::nvvm_lg2_approx_d
                                                              : llvm::Intrinsic::nvvm_lg2_approx_f),
                       {x});
}

// exp, log, tanh, erf, sigmoid and pow of one f32/f64 scalar; others: LLVM's intrinsics.
llvm::Value* NvptxEmitter::scalarMath(MathFunc f, llvm::Value* a, llvm::Value* b) {
  llvm::Type* t = a->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto exp = [&](llvm::Value* x) { return exp2(b_.CreateFMul(x, c(M_LOG2E))); };
  switch (f) {
  case MathFunc::Exp: return exp(a);
  case MathFunc::Log: return b_.CreateFMul(log2(a), c(M_LN2));
  case MathFunc::Sigmoid:
    return b_.CreateFDiv(c(1.0), b_.CreateFAdd(c(1.0), exp(b_.CreateFNeg(a))));
  case MathFunc::Pow: // a^b = 2^(b log2 a) for a > 0; a = 0 gives 2^-inf = 0 (b > 0)
    return exp2(b_.CreateFMul(b, log2(a)));
  case MathFunc::Tanh: {
    // Near 0 the series (no cancellation), else 1 - 2 / (e^2|x| + 1) with the sign of x.
    auto* fabs = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::fabs, {t});
    llvm::Value* ax = b_.CreateCall(fabs, {a});
    llvm::Value* x2 = b_.CreateFMul(a, a);
    llvm::Value* series = b_.CreateFMul(
        a, b_.CreateFAdd(
               c(1.0),
               b_.CreateFMul(
                   x2, b_.CreateFAdd(
                           c(-1.0 / 3),
                           b_.CreateFMul(x2, b_.CreateFAdd(c(2.0 / 15),
                                                           b_.CreateFMul(x2, c(-17.0 / 315))))))));
    llvm::Value* big = b_.CreateFSub(
        c(1.0), b_.CreateFDiv(c(2.0), b_.CreateFAdd(exp(b_.CreateFMul(ax, c(2.0))), c(1.0))));
    auto* copysign = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::copysign, {t});
    big = b_.CreateCall(copysign, {big, a});
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, c(0.125)), series, big);
  }
  case MathFunc::Erf: {
    // Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), odd in x.
    auto* fabs = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::fabs, {t});
    llvm::Value* ax = b_.CreateCall(fabs, {a});
    llvm::Value* k = b_.CreateFDiv(c(1.0), b_.CreateFAdd(c(1.0), b_.CreateFMul(ax, c(0.3275911))));
    const double coef[] = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592};
    llvm::Value* poly = c(coef[0]);
    for (int i = 1; i < 5; ++i) poly = b_.CreateFAdd(b_.CreateFMul(poly, k), c(coef[i]));
    poly = b_.CreateFMul(poly, k);
    llvm::Value* y =
        b_.CreateFSub(c(1.0), b_.CreateFMul(poly, exp(b_.CreateFNeg(b_.CreateFMul(ax, ax)))));
    auto* copysign = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::copysign, {t});
    return b_.CreateCall(copysign, {y, a});
  }
  default: return nullptr;
  }
}

llvm::Value* NvptxEmitter::mathCall(MathFunc f, llvm::Value* a, llvm::Value* b) {
  if (f == MathFunc::Sqrt || f == MathFunc::Rsqrt || f == MathFunc::Abs) return nullptr;
  llvm::Type* t = a->getType();
  auto one = [&](llvm::Value* x, llvm::Value* y) -> llvm::Value* {
    bool half = x->getType()->isHalfTy();
    if (half) {
      x = b_.CreateFPExt(x, b_.getFloatTy());
      if (y) y = b_.CreateFPExt(y, b_.getFloatTy());
    }
    llvm::Value* r = scalarMath(f, x, y);
    return half ? b_.CreateFPTrunc(r, b_.getHalfTy()) : r;
  };
  if (!t->isVectorTy()) return one(a, b);
  auto* vt = llvm::cast<llvm::FixedVectorType>(t);
  llvm::Value* out = llvm::PoisonValue::get(t);
  for (unsigned l = 0; l < vt->getNumElements(); ++l)
    out = b_.CreateInsertElement(out,
                                 one(b_.CreateExtractElement(a, b_.getInt64(l)),
                                     b ? b_.CreateExtractElement(b, b_.getInt64(l)) : nullptr),
                                 b_.getInt64(l));
  return out;
}

} // namespace wm::codegen
