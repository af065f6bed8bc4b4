// CPU backend (see llvm.h). Roadmap:
//  1. Emitter: loop-nest IR -> LLVM IR. An environment maps loop variables and buffers to
//     LLVM values; parallel loops are outlined into functions whose closure is the whole
//     environment. Loads under a select branch are speculated, so their indices are clamped
//     into the buffer (the select discards such values).
//  2. The kernel is an internal function with one noalias, 64-byte aligned pointer per buffer,
//     wrapped by the exported `NAME(void** args)`.
//  3. optimize(): the O3 pipeline with the TargetMachine given to the PassBuilder (without it
//     the loop vectorizer sees no vector registers).
//  4. emit() writes IR/assembly/object; JitKernel uses ORC LLJIT, with the runtime's symbols
//     (wm_parallel_for, wm_alloc, wm_free) defined absolutely and libm found in the process.
#include <wm/codegen/llvm.h>
#include <wm/ir/printer.h>
#include <wm/ir/visitor.h>
#include <wm/runtime/parallel.h>
#include <wm/support/error.h>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace wm::codegen {

using namespace wm::ir;
using namespace wm::lower;

namespace {

void initLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const CpuTarget& t) {
  initLlvm();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) throw UserError("LLVM target " + t.triple + ": " + err);
  llvm::TargetOptions opts;
  opts.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      t.triple, t.cpu, t.features, opts, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw UserError("cannot create a target machine for cpu '" + t.cpu + "'");
  return tm;
}

// Largest total trip count of the loop nest below s (1 for straight-line code).
int64_t nestSteps(const Stmt& s) {
  if (!s.defined()) return 0;
  switch (s.kind()) {
  case StmtKind::For: return s.as<ForNode>()->extent * std::max<int64_t>(1, nestSteps(s.as<ForNode>()->body));
  case StmtKind::Store: return 1;
  case StmtKind::Allocate: return nestSteps(s.as<AllocateNode>()->body);
  case StmtKind::IfThenElse:
    return std::max(nestSteps(s.as<IfThenElseNode>()->then), nestSteps(s.as<IfThenElseNode>()->otherwise));
  case StmtKind::Seq: {
    int64_t n = 0;
    for (auto& x : s.as<SeqNode>()->stmts) n += nestSteps(x);
    return n;
  }
  case StmtKind::Attr: return nestSteps(s.as<AttrNode>()->body);
  }
  return 0;
}

class Emitter {
public:
  Emitter(llvm::LLVMContext& ctx, llvm::Module& m) : ctx_(ctx), m_(m), b_(ctx) {
    fmf_.setAllowContract(true);
  }

  void emitKernel(const LoweredFunc& f) {
    std::vector<Buffer> args(f.inputs);
    args.insert(args.end(), f.outputs.begin(), f.outputs.end());
    auto* ptrTy = llvm::PointerType::getUnqual(ctx_);
    std::vector<llvm::Type*> params(args.size(), ptrTy);
    auto* implTy = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    auto* impl = llvm::Function::Create(implTy, llvm::Function::InternalLinkage, f.name + "_impl", m_);
    for (size_t i = 0; i < args.size(); ++i) {
      impl->addParamAttr(i, llvm::Attribute::NoAlias);
      impl->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
      impl->getArg(i)->setName(args[i]->name);
    }
    impl->addFnAttr(llvm::Attribute::NoUnwind);
    fn_ = impl;
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", impl);
    b_.SetInsertPoint(entry);
    allocaPoint_ = entry;
    for (size_t i = 0; i < args.size(); ++i) env_.bufs[args[i].get()] = impl->getArg(i);
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

private:
  struct Env {
    std::unordered_map<const VarNode*, llvm::Value*> vars;
    std::unordered_map<const BufferNode*, llvm::Value*> bufs;
  };

  llvm::Type* typeOf(DType t, bool memory = false) {
    switch (t) {
    case DType::F32: return b_.getFloatTy();
    case DType::F16: return b_.getHalfTy();
    case DType::I32: return b_.getInt32Ty();
    case DType::I64: return b_.getInt64Ty();
    case DType::Bool: return memory ? b_.getInt8Ty() : b_.getInt1Ty();
    }
    return nullptr;
  }
  int64_t bytesOf(DType t) { return t == DType::F16 ? 2 : t == DType::I64 ? 8 : t == DType::Bool ? 1 : 4; }

  // ---- statements ----
  void stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
    case StmtKind::For: return forLoop(s.as<ForNode>());
    case StmtKind::Store: {
      auto* n = s.as<StoreNode>();
      llvm::Value* v = expr(n->value);
      if (n->buffer->dtype == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
      b_.CreateAlignedStore(v, address(n->buffer, n->indices, false), llvm::Align(bytesOf(n->buffer->dtype)));
      return;
    }
    case StmtKind::Allocate: return allocate(s.as<AllocateNode>());
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseNode>();
      llvm::Value* c = expr(n->cond);
      auto* thenBB = llvm::BasicBlock::Create(ctx_, "then", fn_);
      auto* elseBB = n->otherwise.defined() ? llvm::BasicBlock::Create(ctx_, "else", fn_) : nullptr;
      auto* join = llvm::BasicBlock::Create(ctx_, "endif", fn_);
      b_.CreateCondBr(c, thenBB, elseBB ? elseBB : join);
      b_.SetInsertPoint(thenBB);
      stmt(n->then);
      b_.CreateBr(join);
      if (elseBB) {
        b_.SetInsertPoint(elseBB);
        stmt(n->otherwise);
        b_.CreateBr(join);
      }
      b_.SetInsertPoint(join);
      return;
    }
    case StmtKind::Seq:
      for (auto& x : s.as<SeqNode>()->stmts) stmt(x);
      return;
    case StmtKind::Attr: {
      auto* n = s.as<AttrNode>();
      int64_t saved = unrollBudget_;
      if (n->key == "auto_unroll_max_step") unrollBudget_ = n->value;
      stmt(n->body);
      unrollBudget_ = saved;
      return;
    }
    }
  }

  void allocate(const AllocateNode* n) {
    const Buffer& buf = n->buffer;
    int64_t bytes = buf->allocElements() * bytesOf(buf->dtype);
    llvm::Value* ptr;
    bool heap = bytes > 64 * 1024;
    if (!heap) {
      llvm::IRBuilder<> entry(allocaPoint_, allocaPoint_->begin());
      auto* a = entry.CreateAlloca(typeOf(buf->dtype, true), entry.getInt64(buf->allocElements()), buf->name);
      a->setAlignment(llvm::Align(64));
      ptr = a;
    } else {
      auto* allocFn = llvm::cast<llvm::Function>(
          m_.getOrInsertFunction("wm_alloc", llvm::PointerType::getUnqual(ctx_), b_.getInt64Ty()).getCallee());
      // Fresh memory: it aliases nothing else, so its accesses can be kept in registers.
      allocFn->addRetAttr(llvm::Attribute::NoAlias);
      allocFn->addRetAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
      ptr = b_.CreateCall(allocFn, {b_.getInt64(bytes)}, buf->name);
    }
    env_.bufs[buf.get()] = ptr;
    stmt(n->body);
    env_.bufs.erase(buf.get());
    if (heap) {
      auto freeFn = m_.getOrInsertFunction("wm_free", b_.getVoidTy(), llvm::PointerType::getUnqual(ctx_));
      b_.CreateCall(freeFn, {ptr});
    }
  }

  llvm::MDNode* loopMetadata(const ForNode* n) {
    std::vector<llvm::Metadata*> ops{nullptr};
    auto flag = [&](const char* name) { ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name)})); };
    // auto_unroll_max_step: a serial loop whose whole nest takes at most that many steps.
    bool unroll = n->forKind == ForKind::Unrolled ||
                  (n->forKind == ForKind::Serial && unrollBudget_ > 0 &&
                   n->extent * std::max<int64_t>(1, nestSteps(n->body)) <= unrollBudget_);
    // A vectorized loop reaching here has guards or inner loops (tryVectorLoop declined it):
    // LLVM's vectorizer decides; forcing it only yields warnings where it cannot.
    if (unroll) flag("llvm.loop.unroll.full");
    if (ops.size() == 1) return nullptr;
    auto* md = llvm::MDNode::getDistinct(ctx_, ops);
    md->replaceOperandWith(0, md);
    return md;
  }

  void forLoop(const ForNode* n) {
    if (n->forKind == ForKind::Parallel) return parallelLoop(n);
    if (tryVectorLoop(n)) return;
    auto* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, n->var.name() + ".header", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, n->var.name() + ".body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, n->var.name() + ".exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    auto* i = b_.CreatePHI(b_.getInt64Ty(), 2, n->var.name());
    i->addIncoming(b_.getInt64(0), pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, b_.getInt64(n->extent)), body, exit);
    b_.SetInsertPoint(body);
    env_.vars[n->var.node()] = i;
    stmt(n->body);
    auto* next = b_.CreateAdd(i, b_.getInt64(1), "", true, true);
    auto* latch = b_.GetInsertBlock();
    auto* br = b_.CreateBr(header);
    if (auto* md = loopMetadata(n)) br->setMetadata(llvm::LLVMContext::MD_loop, md);
    i->addIncoming(next, latch);
    env_.vars.erase(n->var.node());
    b_.SetInsertPoint(exit);
  }

  // Outlines the loop body into fn(i64 i, ptr closure); the closure holds every value of the
  // environment.
  void parallelLoop(const ForNode* n) {
    auto* ptrTy = llvm::PointerType::getUnqual(ctx_);
    std::vector<std::pair<const VarNode*, llvm::Value*>> vars(env_.vars.begin(), env_.vars.end());
    std::vector<std::pair<const BufferNode*, llvm::Value*>> bufs(env_.bufs.begin(), env_.bufs.end());
    std::vector<llvm::Type*> fields;
    for (size_t k = 0; k < vars.size(); ++k) fields.push_back(b_.getInt64Ty());
    for (size_t k = 0; k < bufs.size(); ++k) fields.push_back(ptrTy);
    auto* closureTy = llvm::StructType::get(ctx_, fields);
    llvm::IRBuilder<> entry(allocaPoint_, allocaPoint_->begin());
    auto* closure = entry.CreateAlloca(closureTy, nullptr, "closure");
    for (size_t k = 0; k < vars.size(); ++k) b_.CreateStore(vars[k].second, b_.CreateStructGEP(closureTy, closure, k));
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
    for (size_t k = 0; k < bufs.size(); ++k) inner->addParamAttr(1 + vars.size() + k, llvm::Attribute::NoAlias);
    auto* bodyTy = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt64Ty(), ptrTy}, false);
    auto* body = llvm::Function::Create(bodyTy, llvm::Function::InternalLinkage, fn_->getName() + "_par_" + n->var.name(), m_);
    body->addFnAttr(llvm::Attribute::NoUnwind);
    // Save the emission context, emit both functions, restore.
    auto* savedFn = fn_;
    auto* savedAlloca = allocaPoint_;
    auto savedIp = b_.saveIP();
    Env savedEnv = env_;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body));
    std::vector<llvm::Value*> innerArgs{body->getArg(0)};
    for (size_t k = 0; k < vars.size(); ++k)
      innerArgs.push_back(b_.CreateLoad(b_.getInt64Ty(), b_.CreateStructGEP(closureTy, body->getArg(1), k)));
    for (size_t k = 0; k < bufs.size(); ++k)
      innerArgs.push_back(b_.CreateLoad(ptrTy, b_.CreateStructGEP(closureTy, body->getArg(1), vars.size() + k)));
    b_.CreateCall(inner, innerArgs);
    b_.CreateRetVoid();
    fn_ = inner;
    auto* ientry = llvm::BasicBlock::Create(ctx_, "entry", inner);
    allocaPoint_ = ientry;
    b_.SetInsertPoint(ientry);
    env_ = Env();
    for (size_t k = 0; k < vars.size(); ++k) env_.vars[vars[k].first] = inner->getArg(1 + k);
    for (size_t k = 0; k < bufs.size(); ++k) env_.bufs[bufs[k].first] = inner->getArg(1 + vars.size() + k);
    env_.vars[n->var.node()] = inner->getArg(0);
    stmt(n->body);
    b_.CreateRetVoid();
    fn_ = savedFn;
    allocaPoint_ = savedAlloca;
    b_.restoreIP(savedIp);
    env_ = savedEnv;
    auto callee = m_.getOrInsertFunction("wm_parallel_for", b_.getVoidTy(), b_.getInt64Ty(), ptrTy, ptrTy);
    b_.CreateCall(callee, {b_.getInt64(n->extent), body, closure});
  }

  // ---- memory ----
  llvm::Value* address(const Buffer& buf, const std::vector<Expr>& indices, bool clamp) {
    llvm::Value* flat = b_.getInt64(0);
    for (size_t d = 0; d < indices.size(); ++d) {
      llvm::Value* i = toI64(expr(indices[d]), indices[d].dtype());
      if (clamp) {
        i = b_.CreateSelect(b_.CreateICmpSLT(i, b_.getInt64(0)), b_.getInt64(0), i);
        i = b_.CreateSelect(b_.CreateICmpSGT(i, b_.getInt64(buf->shape[d] - 1)), b_.getInt64(buf->shape[d] - 1), i);
      }
      flat = b_.CreateAdd(flat, b_.CreateMul(i, b_.getInt64(buf->strides[d])));
    }
    auto it = env_.bufs.find(buf.get());
    WM_CHECK(it != env_.bufs.end()) << "codegen: buffer " << buf->name << " is not in scope";
    return b_.CreateInBoundsGEP(typeOf(buf->dtype, true), it->second, flat);
  }

  llvm::Value* toI64(llvm::Value* v, DType t) { return t == DType::I64 ? v : b_.CreateSExt(v, b_.getInt64Ty()); }

  // ---- expressions ----
  // value(e, vec): the scalar value of e, or (vec) the vector of its values over the lanes of
  // the loop being vectorized (lane_.var = 0..lane_.width-1).
  llvm::Value* expr(const Expr& e) { return value(e, false); }

  llvm::Value* splat(llvm::Value* v, bool vec) {
    return vec ? b_.CreateVectorSplat(static_cast<unsigned>(lane_.width), v) : v;
  }

  llvm::Value* value(const Expr& e, bool vec) {
    switch (e.kind()) {
    case ExprKind::IntImm: {
      int64_t v = e.as<IntImmNode>()->value;
      return splat(llvm::ConstantInt::get(typeOf(e.dtype()), static_cast<uint64_t>(v), true), vec);
    }
    case ExprKind::FloatImm:
      return splat(llvm::ConstantFP::get(typeOf(e.dtype()), e.as<FloatImmNode>()->value), vec);
    case ExprKind::Var: {
      if (vec && e.as<VarNode>() == lane_.var) {
        std::vector<llvm::Constant*> lanes;
        for (int64_t i = 0; i < lane_.width; ++i) lanes.push_back(b_.getInt64(i));
        return llvm::ConstantVector::get(lanes);
      }
      auto it = env_.vars.find(e.as<VarNode>());
      WM_CHECK(it != env_.vars.end()) << "codegen: variable " << e.as<VarNode>()->name << " is not in scope";
      return splat(it->second, vec);
    }
    case ExprKind::Binary: {
      auto* n = e.as<BinaryNode>();
      return binaryOp(n->op, isFloat(n->dtype), value(n->a, vec), value(n->b, vec));
    }
    case ExprKind::Compare: {
      auto* n = e.as<CompareNode>();
      llvm::Value *a = value(n->a, vec), *c = value(n->b, vec);
      if (isFloat(n->a.dtype())) {
        static const llvm::CmpInst::Predicate p[] = {llvm::CmpInst::FCMP_OEQ, llvm::CmpInst::FCMP_UNE,
                                                     llvm::CmpInst::FCMP_OLT, llvm::CmpInst::FCMP_OLE,
                                                     llvm::CmpInst::FCMP_OGT, llvm::CmpInst::FCMP_OGE};
        return b_.CreateFCmp(p[static_cast<int>(n->op)], a, c);
      }
      static const llvm::CmpInst::Predicate p[] = {llvm::CmpInst::ICMP_EQ, llvm::CmpInst::ICMP_NE,
                                                   llvm::CmpInst::ICMP_SLT, llvm::CmpInst::ICMP_SLE,
                                                   llvm::CmpInst::ICMP_SGT, llvm::CmpInst::ICMP_SGE};
      return b_.CreateICmp(p[static_cast<int>(n->op)], a, c);
    }
    case ExprKind::Logical: {
      auto* n = e.as<LogicalNode>();
      llvm::Value *a = value(n->a, vec), *c = value(n->b, vec);
      return n->op == LogicalOp::And ? b_.CreateAnd(a, c) : b_.CreateOr(a, c);
    }
    case ExprKind::Not: return b_.CreateNot(value(e.as<NotNode>()->a, vec));
    case ExprKind::Select: {
      auto* n = e.as<SelectNode>();
      llvm::Value* c = value(n->cond, vec);
      ++speculative_;
      llvm::Value *t = value(n->t, vec), *f = value(n->f, vec);
      --speculative_;
      return b_.CreateSelect(c, t, f);
    }
    case ExprKind::Cast: {
      auto* n = e.as<CastNode>();
      return castOp(n->value.dtype(), n->dtype, value(n->value, vec), vec);
    }
    case ExprKind::Call: return callOp(e.as<CallNode>(), vec);
    case ExprKind::BufferLoad: return vec ? vectorLoad(e.as<BufferLoadNode>()) : scalarLoad(e.as<BufferLoadNode>());
    case ExprKind::TensorRead: WM_CHECK(false) << "codegen: tensor read in lowered IR"; return nullptr;
    }
    return nullptr;
  }

  llvm::Value* scalarLoad(const BufferLoadNode* n) {
    llvm::Value* v = b_.CreateAlignedLoad(typeOf(n->buffer->dtype, true), address(n->buffer, n->indices, speculative_ > 0),
                                          llvm::Align(bytesOf(n->buffer->dtype)));
    if (n->buffer->dtype == DType::Bool) v = b_.CreateICmpNE(v, b_.getInt8(0));
    return v;
  }

  // The flat element offset of an access, as an expression (for the lane analysis).
  Expr flatIndex(const Buffer& buf, const std::vector<Expr>& indices) {
    Expr flat;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr term = indices[d] * static_cast<double>(buf->strides[d]);
      flat = flat.defined() ? flat + term : term;
    }
    return flat.defined() ? flat : intImm(0);
  }

  // Coefficient of the lane variable in e if e is affine in it; nullopt otherwise.
  std::optional<int64_t> laneCoefficient(const Expr& e) {
    bool mentions = false;
    postOrderVisit(e, [&](const Expr& x) { mentions |= x.as<VarNode>() == lane_.var; });
    if (!mentions) return 0;
    if (e.as<VarNode>() == lane_.var) return 1;
    if (auto* b = e.as<BinaryNode>()) {
      int64_t c;
      if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
        auto x = laneCoefficient(b->a), y = laneCoefficient(b->b);
        if (!x || !y) return std::nullopt;
        return b->op == BinaryOp::Add ? *x + *y : *x - *y;
      }
      if (b->op == BinaryOp::Mul) {
        if (isConstInt(b->b, &c)) {
          auto x = laneCoefficient(b->a);
          return x ? std::optional<int64_t>(*x * c) : std::nullopt;
        }
        if (isConstInt(b->a, &c)) {
          auto x = laneCoefficient(b->b);
          return x ? std::optional<int64_t>(*x * c) : std::nullopt;
        }
      }
    }
    return std::nullopt;
  }

  // Emits f once per lane with the lane variable bound to that lane's number.
  template <typename F> void perLane(F f) {
    const VarNode* v = lane_.var;
    auto saved = env_.vars.count(v) ? env_.vars[v] : nullptr;
    for (int64_t l = 0; l < lane_.width; ++l) {
      env_.vars[v] = b_.getInt64(l);
      f(l);
    }
    if (saved) env_.vars[v] = saved;
    else env_.vars.erase(v);
  }

  llvm::Value* vectorLoad(const BufferLoadNode* n) {
    llvm::Type* et = typeOf(n->buffer->dtype, true);
    auto coeff = speculative_ > 0 ? std::nullopt : laneCoefficient(flatIndex(n->buffer, n->indices));
    if (coeff && *coeff == 0) return splat(scalarLoad(n), true);
    if (coeff && *coeff == 1 && n->buffer->dtype != DType::Bool) {
      llvm::Value* base = nullptr;
      perLaneFirst([&] { base = address(n->buffer, n->indices, false); });
      auto* vt = llvm::FixedVectorType::get(et, static_cast<unsigned>(lane_.width));
      return b_.CreateAlignedLoad(vt, base, llvm::Align(bytesOf(n->buffer->dtype)));
    }
    llvm::Value* out = llvm::PoisonValue::get(llvm::FixedVectorType::get(typeOf(n->buffer->dtype), static_cast<unsigned>(lane_.width)));
    perLane([&](int64_t l) { out = b_.CreateInsertElement(out, scalarLoad(n), b_.getInt64(l)); });
    return out;
  }

  // Emits f with the lane variable bound to 0 (the first lane's address).
  template <typename F> void perLaneFirst(F f) {
    const VarNode* v = lane_.var;
    auto it = env_.vars.find(v);
    llvm::Value* saved = it == env_.vars.end() ? nullptr : it->second;
    env_.vars[v] = b_.getInt64(0);
    f();
    if (saved) env_.vars[v] = saved;
    else env_.vars.erase(v);
  }

  llvm::Value* binaryOp(BinaryOp op, bool fp, llvm::Value* a, llvm::Value* c) {
    llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
    b_.setFastMathFlags(fmf_);
    switch (op) {
    case BinaryOp::Add: return fp ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
    case BinaryOp::Sub: return fp ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
    case BinaryOp::Mul: return fp ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
    case BinaryOp::Div: {
      if (fp) return b_.CreateFDiv(a, c);
      // floor division: q = a / c rounded toward -inf
      llvm::Value* q = b_.CreateSDiv(a, c);
      llvm::Value* r = b_.CreateSRem(a, c);
      auto* zero = llvm::Constant::getNullValue(a->getType());
      llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero),
                                         b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(c, zero)));
      return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
    }
    case BinaryOp::Mod: {
      if (fp) {
        auto* fl = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::floor, {a->getType()});
        return b_.CreateFSub(a, b_.CreateFMul(b_.CreateCall(fl, {b_.CreateFDiv(a, c)}), c));
      }
      llvm::Value* r = b_.CreateSRem(a, c);
      auto* zero = llvm::Constant::getNullValue(a->getType());
      llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero),
                                         b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(c, zero)));
      return b_.CreateSelect(adjust, b_.CreateAdd(r, c), r);
    }
    case BinaryOp::Min: // std::min(a, b) = b < a ? b : a
      return b_.CreateSelect(fp ? b_.CreateFCmpOLT(c, a) : b_.CreateICmpSLT(c, a), c, a);
    case BinaryOp::Max: // std::max(a, b) = a < b ? b : a
      return b_.CreateSelect(fp ? b_.CreateFCmpOLT(a, c) : b_.CreateICmpSLT(a, c), c, a);
    }
    return nullptr;
  }

  llvm::Value* castOp(DType from, DType to, llvm::Value* v, bool vec) {
    llvm::Type* t = typeOf(to);
    if (vec) t = llvm::FixedVectorType::get(t, static_cast<unsigned>(lane_.width));
    if (from == to) return v;
    if (to == DType::Bool)
      return isFloat(from) ? b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()))
                           : b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    if (from == DType::Bool) return isFloat(to) ? b_.CreateUIToFP(v, t) : b_.CreateZExt(v, t);
    if (isFloat(from) && isFloat(to)) return b_.CreateFPCast(v, t);
    if (isFloat(from)) return b_.CreateFPToSI(v, t);
    if (isFloat(to)) return b_.CreateSIToFP(v, t);
    return b_.CreateSExtOrTrunc(v, t);
  }

  llvm::Value* callOp(const CallNode* n, bool vec) {
    llvm::Value* a = value(n->args[0], vec);
    llvm::Type* t = a->getType();
    auto intrinsic = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
      return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id, {t}), args);
    };
    // libm functions on one scalar; vectors go lane by lane.
    auto libm = [&](const char* f32, const char* f64) -> llvm::Value* {
      auto scalar = [&](llvm::Value* x) -> llvm::Value* {
        llvm::Type* st = x->getType();
        bool half = st->isHalfTy();
        llvm::Type* ct = half ? b_.getFloatTy() : st;
        llvm::Value* y = half ? b_.CreateFPExt(x, ct) : x;
        auto fn = m_.getOrInsertFunction(ct->isDoubleTy() ? f64 : f32, ct, ct);
        llvm::Value* r = b_.CreateCall(fn, {y});
        return half ? b_.CreateFPTrunc(r, st) : r;
      };
      if (!vec) return scalar(a);
      llvm::Value* out = llvm::PoisonValue::get(t);
      for (int64_t l = 0; l < lane_.width; ++l)
        out = b_.CreateInsertElement(out, scalar(b_.CreateExtractElement(a, b_.getInt64(l))), b_.getInt64(l));
      return out;
    };
    llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
    b_.setFastMathFlags(fmf_);
    auto one = [&] { return llvm::ConstantFP::get(t, 1.0); };
    switch (n->func) {
    case MathFunc::Exp: return intrinsic(llvm::Intrinsic::exp, {a});
    case MathFunc::Log: return intrinsic(llvm::Intrinsic::log, {a});
    case MathFunc::Sqrt: return intrinsic(llvm::Intrinsic::sqrt, {a});
    case MathFunc::Rsqrt: return b_.CreateFDiv(one(), intrinsic(llvm::Intrinsic::sqrt, {a}));
    case MathFunc::Tanh: return libm("tanhf", "tanh");
    case MathFunc::Erf: return libm("erff", "erf");
    case MathFunc::Sigmoid: {
      llvm::Value* e = intrinsic(llvm::Intrinsic::exp, {b_.CreateFNeg(a)});
      return b_.CreateFDiv(one(), b_.CreateFAdd(one(), e));
    }
    case MathFunc::Pow: return intrinsic(llvm::Intrinsic::pow, {a, value(n->args[1], vec)});
    case MathFunc::Abs:
      if (t->isIntOrIntVectorTy()) {
        auto* zero = llvm::Constant::getNullValue(t);
        return b_.CreateSelect(b_.CreateICmpSLT(a, zero), b_.CreateNeg(a), a);
      }
      return intrinsic(llvm::Intrinsic::fabs, {a});
    }
    return nullptr;
  }

  // ---- explicit vectorization ----
  // A vectorized loop whose body is a sequence of stores becomes vector code: contiguous
  // accesses are vector loads/stores, others go lane by lane. Anything else (nested loops,
  // guards) is left to LLVM's loop vectorizer through metadata.
  static bool storesOnly(const Stmt& s) {
    if (auto* q = s.as<SeqNode>()) {
      for (auto& x : q->stmts)
        if (!storesOnly(x)) return false;
      return true;
    }
    if (auto* st = s.as<StoreNode>()) return st->buffer->dtype != DType::Bool;
    return false;
  }

  bool tryVectorLoop(const ForNode* n) {
    if (n->forKind != ForKind::Vectorized || n->extent < 2 || n->extent > 64 || lane_.var) return false;
    if (!storesOnly(n->body)) return false;
    lane_ = {n->var.node(), n->extent};
    std::vector<const StoreNode*> stores;
    std::function<void(const Stmt&)> collect = [&](const Stmt& s) {
      if (auto* q = s.as<SeqNode>()) for (auto& x : q->stmts) collect(x);
      else stores.push_back(s.as<StoreNode>());
    };
    collect(n->body);
    for (auto* st : stores) {
      llvm::Value* v = value(st->value, true);
      auto coeff = laneCoefficient(flatIndex(st->buffer, st->indices));
      llvm::Align align(bytesOf(st->buffer->dtype));
      if (coeff && *coeff == 1) {
        llvm::Value* base = nullptr;
        perLaneFirst([&] { base = address(st->buffer, st->indices, false); });
        b_.CreateAlignedStore(v, base, align);
      } else {
        perLane([&](int64_t l) {
          b_.CreateAlignedStore(b_.CreateExtractElement(v, b_.getInt64(l)), address(st->buffer, st->indices, false), align);
        });
      }
    }
    lane_ = {};
    return true;
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  llvm::FastMathFlags fmf_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* allocaPoint_ = nullptr;
  Env env_;
  int speculative_ = 0;
  int64_t unrollBudget_ = 0;
  struct Lane {
    const VarNode* var = nullptr;
    int64_t width = 0;
  } lane_;
};

struct BuiltModule {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> tm;
};

BuiltModule build(const LoweredFunc& f, const CpuTarget& target, bool optimize) {
  BuiltModule out;
  out.tm = makeTargetMachine(target);
  out.ctx = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>(f.name, *out.ctx);
  out.module->setTargetTriple(target.triple);
  out.module->setDataLayout(out.tm->createDataLayout());
  Emitter(*out.ctx, *out.module).emitKernel(f);
  std::string err;
  llvm::raw_string_ostream es(err);
  WM_CHECK(!llvm::verifyModule(*out.module, &es)) << "codegen produced invalid LLVM IR: " << es.str();
  if (optimize) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(out.tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    auto mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(*out.module, mam);
  }
  return out;
}

class LlJitKernel : public JitKernel {
public:
  explicit LlJitKernel(std::unique_ptr<llvm::orc::LLJIT> jit, void (*fn)(void**)) : jit_(std::move(jit)), fn_(fn) {}
  void call(void** args) const override { fn_(args); }

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  void (*fn_)(void**);
};

} // namespace

CpuTarget CpuTarget::host(const std::string& cpu, const std::string& attrs) {
  initLlvm();
  CpuTarget t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = cpu.empty() ? llvm::sys::getHostCPUName().str() : cpu;
  if (!attrs.empty()) {
    t.features = attrs;
  } else if (cpu.empty()) {
    std::vector<std::string> feats;
    for (auto& kv : llvm::sys::getHostCPUFeatures()) feats.push_back((kv.second ? "+" : "-") + kv.first().str());
    std::sort(feats.begin(), feats.end());
    for (size_t i = 0; i < feats.size(); ++i) t.features += (i ? "," : "") + feats[i];
  }
  return t;
}

std::string emit(const LoweredFunc& f, const CpuTarget& target, EmitKind kind, bool optimize) {
  BuiltModule m = build(f, target, optimize);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (kind == EmitKind::LlvmIr) {
    m.module->print(os, nullptr);
    return os.str();
  }
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream vs(buf);
  llvm::legacy::PassManager pm;
  auto type = kind == EmitKind::Assembly ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile;
  WM_CHECK(!m.tm->addPassesToEmitFile(pm, vs, nullptr, type)) << "the target cannot emit this file type";
  pm.run(*m.module);
  return std::string(buf.begin(), buf.end());
}

std::unique_ptr<JitKernel> JitKernel::compile(const LoweredFunc& f, const CpuTarget& target) {
  BuiltModule m = build(f, target, true);
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
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) throw InternalError("LLJIT: " + llvm::toString(gen.takeError()));
  dylib.addGenerator(std::move(*gen));
  auto& es = (*jit)->getExecutionSession();
  llvm::orc::SymbolMap rt;
  auto def = [&](const char* name, void* addr) {
    rt[es.intern(name)] = {llvm::orc::ExecutorAddr::fromPtr(addr), llvm::JITSymbolFlags::Exported};
  };
  def("wm_parallel_for", reinterpret_cast<void*>(&wm_parallel_for));
  def("wm_alloc", reinterpret_cast<void*>(&wm_alloc));
  def("wm_free", reinterpret_cast<void*>(&wm_free));
  if (auto err = dylib.define(llvm::orc::absoluteSymbols(std::move(rt))))
    throw InternalError("LLJIT: " + llvm::toString(std::move(err)));
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(m.module), std::move(m.ctx))))
    throw InternalError("LLJIT: " + llvm::toString(std::move(err)));
  auto sym = (*jit)->lookup(f.name);
  if (!sym) throw InternalError("LLJIT lookup of " + f.name + ": " + llvm::toString(sym.takeError()));
  auto* fn = sym->toPtr<void (*)(void**)>();
  return std::make_unique<LlJitKernel>(std::move(*jit), fn);
}

} // namespace wm::codegen
