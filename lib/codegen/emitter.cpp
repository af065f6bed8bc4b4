// The target-neutral emitter (see emitter.h). Roadmap:
//  1. Statements: loops (serial, unrolled through loop metadata, vectorized as explicit
//     vectors where the body is straight-line stores), conditionals, allocations; parallel and
//     thread-bound loops and buffer allocation go to the target's hooks.
//  2. Expressions: scalar or, inside an explicitly vectorized loop, over its lanes. Loads
//     under a select branch are speculated, so their indices are clamped into the buffer (the
//     select discards such values).
#include "emitter.h"

#include <wm/ir/printer.h>
#include <wm/ir/simplify.h>
#include <wm/ir/visitor.h>
#include <wm/support/error.h>

#include <llvm/IR/Intrinsics.h>

#include <functional>

namespace wm::codegen {

using namespace wm::ir;
using namespace wm::lower;

// Largest total trip count of the loop nest below s (1 for straight-line code).
int64_t nestSteps(const Stmt& s) {
  if (!s.defined()) return 0;
  switch (s.kind()) {
  case StmtKind::For:
    return s.as<ForNode>()->extent * std::max<int64_t>(1, nestSteps(s.as<ForNode>()->body));
  case StmtKind::Store: return 1;
  case StmtKind::Allocate: return nestSteps(s.as<AllocateNode>()->body);
  case StmtKind::IfThenElse:
    return std::max(nestSteps(s.as<IfThenElseNode>()->then),
                    nestSteps(s.as<IfThenElseNode>()->otherwise));
  case StmtKind::Seq: {
    int64_t n = 0;
    for (auto& x : s.as<SeqNode>()->stmts) n += nestSteps(x);
    return n;
  }
  case StmtKind::Attr: return nestSteps(s.as<AttrNode>()->body);
  case StmtKind::Barrier: return 0;
  }
  return 0;
}

namespace {

// A vectorized loop whose body is a sequence of stores (or one guard around them: see
// tryVectorLoop) becomes vector code: contiguous accesses are vector loads/stores, others go
// lane by lane. Anything else (nested loops, else branches) is left to LLVM's loop vectorizer
// through metadata.
bool storesOnly(const Stmt& s) {
  if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->stmts)
      if (!storesOnly(x)) return false;
    return true;
  }
  if (auto* st = s.as<StoreNode>()) return st->buffer->dtype != DType::Bool;
  return false;
}

// The stores of a storesOnly body, in order.
void collectStores(const Stmt& s, std::vector<const StoreNode*>* out) {
  if (auto* q = s.as<SeqNode>())
    for (auto& x : q->stmts) collectStores(x, out);
  else
    out->push_back(s.as<StoreNode>());
}

// Structural equality of index expressions (conservative: other kinds compare unequal).
bool sameExpr(const Expr& a, const Expr& b) {
  if (a.get() == b.get()) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
  case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
  case ExprKind::Var: return a.as<VarNode>() == b.as<VarNode>();
  case ExprKind::Binary: {
    auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
    return x->op == y->op && sameExpr(x->a, y->a) && sameExpr(x->b, y->b);
  }
  default: return false;
  }
}

} // namespace

LoopEmitter::LoopEmitter(llvm::LLVMContext& ctx, llvm::Module& m) : ctx_(ctx), m_(m), b_(ctx) {
  fmf_.setAllowContract(true); // float arithmetic may be contracted into FMAs
}

void LoopEmitter::beginFunction(llvm::Function* fn) {
  fn_ = fn;
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
  b_.SetInsertPoint(entry);
  allocaPoint_ = entry;
}

llvm::Type* LoopEmitter::typeOf(DType t, bool memory) {
  switch (t) {
  case DType::F32: return b_.getFloatTy();
  case DType::F16: return b_.getHalfTy();
  case DType::I32: return b_.getInt32Ty();
  case DType::I64: return b_.getInt64Ty();
  case DType::Bool: return memory ? b_.getInt8Ty() : b_.getInt1Ty();
  }
  return nullptr;
}

// ---- statements ----
// A floating-point sum into the stored element, `b[i] = b[i] + x`, is a reduction's update:
// its add may be reassociated, so LLVM keeps partial sums in vector lanes (and several
// accumulators) instead of one serial chain of adds. Only this add gets the flag; x keeps
// the default flags (reassociating the exp polynomial would break its range reduction).
// Null when n is no such update.
llvm::Value* LoopEmitter::reductionUpdate(const StoreNode* n) {
  auto* add = n->value.as<BinaryNode>();
  if (!add || !isFloat(n->buffer->dtype)) return nullptr;
  if (add->op != BinaryOp::Add && add->op != BinaryOp::Max && add->op != BinaryOp::Min)
    return nullptr;
  auto isAcc = [&](const Expr& e) {
    auto* ld = e.as<BufferLoadNode>();
    if (!ld || ld->buffer != n->buffer || ld->indices.size() != n->indices.size()) return false;
    for (size_t i = 0; i < ld->indices.size(); ++i)
      if (!deepEqual(ld->indices[i], n->indices[i])) return false;
    return true;
  };
  if (!isAcc(add->a) && !isAcc(add->b)) return nullptr;
  llvm::Value* a = expr(add->a);
  llvm::Value* c = expr(add->b);
  llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
  llvm::FastMathFlags f = fmf_;
  f.setAllowReassoc(true);
  if (add->op == BinaryOp::Add) {
    b_.setFastMathFlags(f);
    return b_.CreateFAdd(a, c);
  }
  f.setNoNaNs(true);
  f.setNoSignedZeros(true);
  b_.setFastMathFlags(f);
  auto id = add->op == BinaryOp::Max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum;
  return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id, {a->getType()}), {a, c});
}

void LoopEmitter::stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
  case StmtKind::For: return forLoop(s.as<ForNode>());
  case StmtKind::Store: {
    auto* n = s.as<StoreNode>();
    llvm::Value* v = reductionUpdate(n);
    if (!v) v = expr(n->value);
    if (n->buffer->dtype == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
    b_.CreateAlignedStore(v, address(n->buffer, n->indices, false),
                          llvm::Align(storageBytes(n->buffer->dtype)));
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
  case StmtKind::Barrier: return barrier();
  }
}

void LoopEmitter::allocate(const AllocateNode* n) {
  const Buffer& buf = n->buffer;
  bool release = false;
  llvm::Value* ptr = allocateBuffer(buf, buf->allocElements() * storageBytes(buf->dtype), &release);
  env_.bufs.bind(buf.get(), ptr);
  stmt(n->body);
  env_.bufs.erase(buf.get());
  if (release) freeBuffer(ptr);
}

llvm::MDNode* LoopEmitter::loopMetadata(const ForNode* n) {
  std::vector<llvm::Metadata*> ops{nullptr};
  auto flag = [&](const char* name) {
    ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name)}));
  };
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

void LoopEmitter::forLoop(const ForNode* n) {
  switch (n->forKind) {
  case ForKind::Parallel: return parallelLoop(n);
  case ForKind::ThreadBound: return threadBoundLoop(n);
  case ForKind::Vectorized:
    if (tryVectorLoop(n)) return;
    return serialLoop(n);
  case ForKind::Serial:
    if (unrolledAsVector(n)) return;
    return serialLoop(n);
  case ForKind::Unrolled: return serialLoop(n);
  }
}

void LoopEmitter::serialLoop(const ForNode* n) {
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
  env_.vars.bind(n->var.node(), i);
  bounds_[n->var.node()] = {0, n->extent - 1};
  stmt(n->body);
  bounds_.erase(n->var.node());
  auto* next = b_.CreateAdd(i, b_.getInt64(1), "", true, true);
  auto* latch = b_.GetInsertBlock();
  auto* br = b_.CreateBr(header);
  if (auto* md = loopMetadata(n)) br->setMetadata(llvm::LLVMContext::MD_loop, md);
  i->addIncoming(next, latch);
  env_.vars.erase(n->var.node());
  b_.SetInsertPoint(exit);
}

// ---- memory ----
llvm::Value* LoopEmitter::address(const Buffer& buf, const std::vector<Expr>& indices, bool clamp) {
  llvm::Value* flat = b_.getInt64(0);
  for (size_t d = 0; d < indices.size(); ++d) {
    llvm::Value* i = toI64(expr(indices[d]), indices[d].dtype());
    if (clamp) {
      i = b_.CreateSelect(b_.CreateICmpSLT(i, b_.getInt64(0)), b_.getInt64(0), i);
      i = b_.CreateSelect(b_.CreateICmpSGT(i, b_.getInt64(buf->shape[d] - 1)),
                          b_.getInt64(buf->shape[d] - 1), i);
    }
    flat = b_.CreateAdd(flat, b_.CreateMul(i, b_.getInt64(buf->strides[d])));
  }
  llvm::Value* base = env_.bufs.find(buf.get());
  WM_CHECK(base) << "codegen: buffer " << buf->name << " is not in scope";
  return b_.CreateInBoundsGEP(typeOf(buf->dtype, true), base, flat);
}

llvm::Value* LoopEmitter::toI64(llvm::Value* v, DType t) {
  return t == DType::I64 ? v : b_.CreateSExt(v, b_.getInt64Ty());
}

// ---- expressions ----
// value(e, vec): the scalar value of e, or (vec) the vector of its values over the lanes of
// the loop being vectorized (lane_.var = 0..lane_.width-1).
llvm::Value* LoopEmitter::splat(llvm::Value* v, bool vec) {
  return vec ? b_.CreateVectorSplat(static_cast<unsigned>(lane_.width), v) : v;
}

llvm::Value* LoopEmitter::value(const Expr& e, bool vec) {
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
    llvm::Value* v = env_.vars.find(e.as<VarNode>());
    WM_CHECK(v) << "codegen: variable " << e.as<VarNode>()->name << " is not in scope";
    return splat(v, vec);
  }
  case ExprKind::Binary: {
    auto* n = e.as<BinaryNode>();
    return binaryOp(n->op, isFloat(n->dtype), value(n->a, vec), value(n->b, vec));
  }
  case ExprKind::Compare: {
    auto* n = e.as<CompareNode>();
    llvm::Value *a = value(n->a, vec), *c = value(n->b, vec);
    if (isFloat(n->a.dtype())) {
      static const llvm::CmpInst::Predicate p[] = {
          llvm::CmpInst::FCMP_OEQ, llvm::CmpInst::FCMP_UNE, llvm::CmpInst::FCMP_OLT,
          llvm::CmpInst::FCMP_OLE, llvm::CmpInst::FCMP_OGT, llvm::CmpInst::FCMP_OGE};
      return b_.CreateFCmp(p[static_cast<int>(n->op)], a, c);
    }
    static const llvm::CmpInst::Predicate p[] = {llvm::CmpInst::ICMP_EQ,  llvm::CmpInst::ICMP_NE,
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
  case ExprKind::BufferLoad:
    return vec ? vectorLoad(e.as<BufferLoadNode>()) : scalarLoad(e.as<BufferLoadNode>());
  case ExprKind::TensorRead:
    WM_CHECK(false) << "codegen: tensor read in lowered IR";
    return nullptr;
  }
  return nullptr;
}

llvm::Value* LoopEmitter::scalarLoad(const BufferLoadNode* n) {
  llvm::Value* v = b_.CreateAlignedLoad(typeOf(n->buffer->dtype, true),
                                        address(n->buffer, n->indices, speculative_ > 0),
                                        llvm::Align(storageBytes(n->buffer->dtype)));
  if (n->buffer->dtype == DType::Bool) v = b_.CreateICmpNE(v, b_.getInt8(0));
  return v;
}

// The flat element offset of an access, as an expression (for the lane analysis).
Expr LoopEmitter::flatIndex(const Buffer& buf, const std::vector<Expr>& indices) {
  Expr flat;
  for (size_t d = 0; d < indices.size(); ++d) {
    Expr term = indices[d] * static_cast<double>(buf->strides[d]);
    flat = flat.defined() ? flat + term : term;
  }
  return flat.defined() ? flat : intImm(0);
}

namespace {

// e as a sum of factor * term (Add/Sub trees and products with a constant flattened).
void sumTerms(const Expr& e, int64_t factor, std::vector<std::pair<Expr, int64_t>>* out) {
  if (auto* b = e.as<BinaryNode>()) {
    int64_t c;
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
      sumTerms(b->a, factor, out);
      sumTerms(b->b, b->op == BinaryOp::Add ? factor : -factor, out);
      return;
    }
    if (b->op == BinaryOp::Mul && isConstInt(b->b, &c)) return sumTerms(b->a, factor * c, out);
    if (b->op == BinaryOp::Mul && isConstInt(b->a, &c)) return sumTerms(b->b, factor * c, out);
  }
  out->emplace_back(e, factor);
}

// x and c of a term x / c or x % c (c > 0), by op.
const Expr* divModOperand(const Expr& e, BinaryOp op, int64_t* c) {
  auto* b = e.as<BinaryNode>();
  return b && b->op == op && isConstInt(b->b, c) && *c > 0 ? &b->a : nullptr;
}

} // namespace

// Coefficient of the lane variable in e if e is affine in it; nullopt otherwise. A sum that
// holds (x / c) * c*k and (x % c) * k holds k*x (floor division: the identity is exact), so a
// read of a plane's rows end to end through a flattened index (a pointwise convolution's
// data[n, ch, f / W, f % W]) is contiguous along f.
std::optional<int64_t> LoopEmitter::laneCoefficient(const Expr& e) {
  bool mentions = false;
  postOrderVisit(e, [&](const Expr& x) { mentions |= x.as<VarNode>() == lane_.var; });
  if (!mentions) return 0;
  if (e.as<VarNode>() == lane_.var) return 1;
  std::vector<std::pair<Expr, int64_t>> terms;
  sumTerms(e, 1, &terms);
  if (terms.size() == 1 && terms[0].second == 1 && terms[0].first.same(e))
    return std::nullopt; // no sum, no product: a division, a select, a call...
  for (auto& [div, a] : terms) {
    int64_t c, c2;
    const Expr* x = divModOperand(div, BinaryOp::Div, &c);
    if (!x || a == 0) continue;
    for (auto& [mod, k] : terms) {
      const Expr* y = divModOperand(mod, BinaryOp::Mod, &c2);
      if (y && c2 == c && k != 0 && a == k * c && deepEqual(*x, *y)) {
        div = *x; // the pair becomes k * x
        a = k;
        k = 0;
        break;
      }
    }
  }
  int64_t sum = 0;
  for (const auto& [t, f] : terms) {
    if (f == 0) continue;
    auto x = laneCoefficient(t);
    if (!x) return std::nullopt;
    sum += *x * f;
  }
  return sum;
}

// Emits f once per lane with the lane variable bound to that lane's number.
template <typename F> void LoopEmitter::perLane(F f) {
  const VarNode* v = lane_.var;
  llvm::Value* saved = env_.vars.find(v);
  for (int64_t l = 0; l < lane_.width; ++l) {
    env_.vars.bind(v, b_.getInt64(l));
    f(l);
  }
  if (saved)
    env_.vars.bind(v, saved);
  else
    env_.vars.erase(v);
}

llvm::Value* LoopEmitter::vectorLoad(const BufferLoadNode* n) {
  llvm::Type* et = typeOf(n->buffer->dtype, true);
  auto coeff = speculative_ > 0 ? std::nullopt : laneCoefficient(flatIndex(n->buffer, n->indices));
  // (Under a mask, a lane-invariant load runs only when some lane is on, so it is in bounds.)
  if (coeff && *coeff == 0) return splat(scalarLoad(n), true);
  if (coeff && *coeff == 1 && n->buffer->dtype != DType::Bool) {
    llvm::Value* base = nullptr;
    perLaneFirst([&] { base = address(n->buffer, n->indices, false); });
    auto* vt = llvm::FixedVectorType::get(et, static_cast<unsigned>(lane_.width));
    llvm::Align align(storageBytes(n->buffer->dtype));
    if (mask_ && !inBoundsLocal(n->buffer, n->indices))
      return b_.CreateMaskedLoad(vt, base, align, mask_, llvm::Constant::getNullValue(vt));
    return b_.CreateAlignedLoad(vt, base, align);
  }
  if (!mask_ && coeff && *coeff >= 2 && *coeff <= kMaxLoadStride && n->buffer->dtype != DType::Bool)
    return stridedLoad(n, *coeff);
  // Lane by lane; under a mask with clamped indices (the lanes that are off read some element
  // of the buffer, and their values are not stored).
  if (mask_) ++speculative_;
  llvm::Value* out = llvm::PoisonValue::get(
      llvm::FixedVectorType::get(typeOf(n->buffer->dtype), static_cast<unsigned>(lane_.width)));
  perLane([&](int64_t l) { out = b_.CreateInsertElement(out, scalarLoad(n), b_.getInt64(l)); });
  if (mask_) --speculative_;
  return out;
}

// A load whose lanes are `stride` elements apart (a stride-2 convolution vectorized along its
// output row): the span from the first lane's element to the last one's as one masked vector
// load (the mask stops at the last lane's element, so nothing past it is touched: the elements
// between lanes are read, never beyond), then the lanes picked out by a shuffle. Element by
// element it was one scalar load and insert a lane: the stride-2 depthwise convolutions of
// MobileNetV2 ran at 11 GFLOP/s.
llvm::Value* LoopEmitter::stridedLoad(const BufferLoadNode* n, int64_t stride) {
  llvm::Type* et = typeOf(n->buffer->dtype, true);
  const auto width = static_cast<unsigned>(lane_.width);
  const auto span = static_cast<unsigned>(stride) * width;
  llvm::Value* base = nullptr;
  perLaneFirst([&] { base = address(n->buffer, n->indices, false); });
  std::vector<llvm::Constant*> mask;
  for (unsigned i = 0; i < span; ++i)
    mask.push_back(b_.getInt1(i <= static_cast<unsigned>(stride) * (width - 1)));
  llvm::Value* wide = b_.CreateMaskedLoad(llvm::FixedVectorType::get(et, span), base,
                                          llvm::Align(storageBytes(n->buffer->dtype)),
                                          llvm::ConstantVector::get(mask));
  std::vector<int> pick;
  for (unsigned l = 0; l < width; ++l) pick.push_back(static_cast<int>(l * stride));
  return b_.CreateShuffleVector(wide, pick);
}

// Emits f with the lane variable bound to 0 (the first lane's address).
template <typename F> void LoopEmitter::perLaneFirst(F f) {
  const VarNode* v = lane_.var;
  llvm::Value* saved = env_.vars.find(v);
  env_.vars.bind(v, b_.getInt64(0));
  f();
  if (saved)
    env_.vars.bind(v, saved);
  else
    env_.vars.erase(v);
}

llvm::Value* LoopEmitter::binaryOp(BinaryOp op, bool fp, llvm::Value* a, llvm::Value* c) {
  llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
  b_.setFastMathFlags(fmf_);
  switch (op) {
  case BinaryOp::Add: return fp ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
  case BinaryOp::Sub: return fp ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
  case BinaryOp::Mul: return fp ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
  case BinaryOp::Div: {
    if (fp) return b_.CreateFDiv(a, c);
    return floorDivMod(a, c, false);
  }
  case BinaryOp::Mod: {
    if (fp) {
      auto* fl = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::floor, {a->getType()});
      return b_.CreateFSub(a, b_.CreateFMul(b_.CreateCall(fl, {b_.CreateFDiv(a, c)}), c));
    }
    return floorDivMod(a, c, true);
  }
  case BinaryOp::Min: // std::min(a, b) = b < a ? b : a
    return b_.CreateSelect(fp ? b_.CreateFCmpOLT(c, a) : b_.CreateICmpSLT(c, a), c, a);
  case BinaryOp::Max: // std::max(a, b) = a < b ? b : a
    return b_.CreateSelect(fp ? b_.CreateFCmpOLT(a, c) : b_.CreateICmpSLT(a, c), c, a);
  }
  return nullptr;
}

llvm::Value* LoopEmitter::castOp(DType from, DType to, llvm::Value* v, bool vec) {
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

llvm::Value* LoopEmitter::callOp(const CallNode* n, bool vec) {
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
      out = b_.CreateInsertElement(out, scalar(b_.CreateExtractElement(a, b_.getInt64(l))),
                                   b_.getInt64(l));
    return out;
  };
  llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
  b_.setFastMathFlags(fmf_);
  llvm::Value* second = n->args.size() > 1 ? value(n->args[1], vec) : nullptr;
  if (llvm::Value* own = mathCall(n->func, a, second)) return own;
  auto one = [&] { return llvm::ConstantFP::get(t, 1.0); };
  switch (n->func) {
  case MathFunc::Exp:
    if (t->getScalarType()->isFloatTy()) return expF32(a);
    return intrinsic(llvm::Intrinsic::exp, {a});
  case MathFunc::Log: return intrinsic(llvm::Intrinsic::log, {a});
  case MathFunc::Sqrt: return intrinsic(llvm::Intrinsic::sqrt, {a});
  case MathFunc::Rsqrt: return b_.CreateFDiv(one(), intrinsic(llvm::Intrinsic::sqrt, {a}));
  case MathFunc::Tanh:
    if (t->getScalarType()->isFloatTy()) return tanhF32(a);
    return libm("tanhf", "tanh");
  case MathFunc::Erf:
    if (t->getScalarType()->isFloatTy()) return erfF32(a);
    return libm("erff", "erf");
  case MathFunc::Sigmoid: {
    llvm::Value* e = t->getScalarType()->isFloatTy()
                         ? expF32(b_.CreateFNeg(a))
                         : intrinsic(llvm::Intrinsic::exp, {b_.CreateFNeg(a)});
    return b_.CreateFDiv(one(), b_.CreateFAdd(one(), e));
  }
  case MathFunc::Pow: return intrinsic(llvm::Intrinsic::pow, {a, second});
  case MathFunc::Abs:
    if (t->isIntOrIntVectorTy()) {
      auto* zero = llvm::Constant::getNullValue(t);
      return b_.CreateSelect(b_.CreateICmpSLT(a, zero), b_.CreateNeg(a), a);
    }
    return intrinsic(llvm::Intrinsic::fabs, {a});
  }
  return nullptr;
}

// exp of f32 (a scalar or a vector), inline: the x86 backend turns llvm.exp on a vector —
// ours, or the loop vectorizer's from a scalar call — into one expf call a lane (softmax spent
// its time there), while this arithmetic vectorizes. x = n ln2 + r with |r| <= ln2 / 2 (ln2 in
// two parts, so n ln2_hi is exact), exp(r) by its degree-7 Taylor polynomial (relative error
// < 1e-8 before rounding), times 2^n built in two halves from exponent bits (each a normal
// float, so the product underflows gradually and overflows to inf as exp does). x is clamped
// to [-104, 88.8] first, where exp is 0 and inf beyond; NaN stays NaN.
llvm::Value* LoopEmitter::expF32(llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Type* it = b_.getInt32Ty();
  if (auto* vt = llvm::dyn_cast<llvm::VectorType>(t))
    it = llvm::VectorType::get(it, vt->getElementCount());
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto ci = [&](int v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  llvm::Value* xc = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum, b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, c(-104.0)),
      c(88.8));
  llvm::Value* n =
      b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b_.CreateFMul(xc, c(1.4426950408889634)));
  llvm::Value* r = b_.CreateFSub(xc, b_.CreateFMul(n, c(0.693145751953125)));
  r = b_.CreateFSub(r, b_.CreateFMul(n, c(1.428606765330187045e-06)));
  llvm::Value* p = horner(r, {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0});
  llvm::Value* ni = b_.CreateFPToSI(n, it);
  llvm::Value* n1 = b_.CreateAShr(ni, ci(1));
  llvm::Value* n2 = b_.CreateSub(ni, n1);
  auto pow2 = [&](llvm::Value* e) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, ci(127)), ci(23)), t);
  };
  llvm::Value* y = b_.CreateFMul(b_.CreateFMul(p, pow2(n1)), pow2(n2));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
}

// p(x) by Horner's rule, coefficients highest degree first.
llvm::Value* LoopEmitter::horner(llvm::Value* x, std::initializer_list<double> coefficients) {
  llvm::Value* p = nullptr;
  for (double k : coefficients) {
    llvm::Value* c = llvm::ConstantFP::get(x->getType(), k);
    p = p ? b_.CreateFAdd(b_.CreateFMul(p, x), c) : c;
  }
  return p;
}

// tanh of f32 (scalar or vector) inline, as exp: libm's tanhf is one call a lane. |x| < 0.9:
// x + x^3 P(x^2); beyond, sign(x) (1 - 2 / (e^(2|x|) + 1)) (no cancellation there: the second
// term is at most 0.29). The polynomials come from scripts/fit_f32_math.py (relative error
// 1.6e-8 before rounding); test/codegen/test_llvm.cpp checks the result against std::tanh.
llvm::Value* LoopEmitter::tanhF32(llvm::Value* x) {
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* u = b_.CreateFMul(x, x);
  llvm::Value* p = horner(u, {0.0013039528492718906, -0.0068600411560357632, 0.020904114984988321,
                              -0.053721486136750658, 0.13330359924204366, -0.33333212178901828});
  llvm::Value* small = b_.CreateFAdd(x, b_.CreateFMul(b_.CreateFMul(x, u), p));
  llvm::Value* e = expF32(b_.CreateFMul(a, c(2.0)));
  llvm::Value* big = b_.CreateFSub(c(1.0), b_.CreateFDiv(c(2.0), b_.CreateFAdd(e, c(1.0))));
  big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
  return b_.CreateSelect(b_.CreateFCmpOLT(a, c(0.9)), small, big);
}

// erf of f32 inline. |x| < 1: x P(x^2); beyond, sign(x) (1 - e^(-x^2) R(1 / (1 + |x|))) with
// |x| clamped to 4 (erf(4) rounds to 1). Polynomials from scripts/fit_f32_math.py (relative
// error 4e-8 and 8e-9 before rounding); NaN stays NaN.
llvm::Value* LoopEmitter::erfF32(llvm::Value* x) {
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* u = b_.CreateFMul(x, x);
  llvm::Value* small = b_.CreateFMul(
      x, horner(u, {-0.00056314213050765946, 0.0049175513509344482, -0.026711311365023308,
                    0.1128018011738194, -0.37612326187577072, 1.1283791224939377}));
  llvm::Value* ac = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, c(4.0));
  llvm::Value* r = horner(b_.CreateFDiv(c(1.0), b_.CreateFAdd(c(1.0), ac)),
                          {-0.64664336533362798, 1.4079608059782336, -0.72445106215446409,
                           -0.5710280602306792, 0.40799884605734926, 0.53867222352443833,
                           0.5668143688253664, -0.00011066017237045523});
  llvm::Value* big =
      b_.CreateFSub(c(1.0), b_.CreateFMul(expF32(b_.CreateFNeg(b_.CreateFMul(ac, ac))), r));
  big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
  llvm::Value* y = b_.CreateSelect(b_.CreateFCmpOLT(a, c(1.0)), small, big);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
}

// Floor division and modulo of signed integers (the IR's semantics): the quotient rounded
// toward -inf, and the remainder with the divisor's sign.
llvm::Value* LoopEmitter::floorDivMod(llvm::Value* a, llvm::Value* c, bool mod) {
  llvm::Value* r = b_.CreateSRem(a, c);
  auto* zero = llvm::Constant::getNullValue(a->getType());
  llvm::Value* adjust =
      b_.CreateAnd(b_.CreateICmpNE(r, zero),
                   b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(c, zero)));
  if (mod) return b_.CreateSelect(adjust, b_.CreateAdd(r, c), r);
  return b_.CreateSub(b_.CreateSDiv(a, c), b_.CreateZExt(adjust, a->getType()));
}

// ---- explicit vectorization ----
// An innermost serial loop that auto_unroll_max_step unrolls whole is, after LLVM's full
// unroll (which runs before its loop vectorizer), straight-line scalar code that the SLP
// vectorizer packs badly (gathers and scatters across rows: a 64-wide GEMM register tile ran
// 75x slower than the same loop annotated vectorize). TVM's code gets vectors there from LLVM;
// here the loop becomes explicit vectors when that is what its unrolled copies are: every
// store contiguous along the loop (no reduction over it), every load contiguous or invariant,
// and a stored buffer read only where the same iteration stores it (no dependence between
// iterations).
bool LoopEmitter::unrolledAsVector(const ForNode* n) {
  if (!vectorizeUnrolledLoops() || lane_.var || n->extent < 4 || n->extent > kMaxVectorLanes ||
      unrollBudget_ <= 0 || !storesOnly(n->body) ||
      n->extent * std::max<int64_t>(1, nestSteps(n->body)) > unrollBudget_)
    return false;
  std::vector<const StoreNode*> stores;
  collectStores(n->body, &stores);
  lane_ = {n->var.node(), n->extent};
  bool ok = true;
  for (auto* st : stores) {
    auto c = laneCoefficient(flatIndex(st->buffer, st->indices));
    ok &= c && *c == 1;
    postOrderVisit(st->value, [&](const Expr& x) {
      auto* ld = x.as<BufferLoadNode>();
      if (!ld || !ok) return;
      auto lc = laneCoefficient(flatIndex(ld->buffer, ld->indices));
      ok &= lc && (*lc == 0 || *lc == 1);
      for (auto* other : stores)
        if (other->buffer.get() == ld->buffer.get()) {
          bool same = other->indices.size() == ld->indices.size();
          for (size_t d = 0; same && d < ld->indices.size(); ++d)
            same = sameExpr(other->indices[d], ld->indices[d]);
          ok &= same;
        }
    });
  }
  lane_ = {};
  return ok && tryVectorLoop(n);
}

// n: a vectorized loop, or a serial one unrolledAsVector found equivalent to one. Its body is
// stores, or stores under one guard (the partial tile of a split that does not divide: the
// loop runs past the tensor's edge). The guard's conjuncts that do not depend on the lane are
// tested once around the vector code; the others are a mask of the lanes that run: a store
// writes only those lanes, a contiguous load reads only those (masked), other loads read every
// lane with clamped indices. A store into a local buffer (one thread's, every lane in bounds)
// keeps the old value in the lanes that are off: a full load, a select and a full store, which
// LLVM keeps in registers (a masked store into a register tile would go through memory on
// every update). Before this, LLVM's loop vectorizer got these loops and left them scalar: the
// attention scores of a ViT (197 tokens, 16 lanes: 13 tiles of 16, the last one partial) ran
// at 16 GFLOP/s.
bool LoopEmitter::tryVectorLoop(const ForNode* n) {
  if (n->extent < 2 || n->extent > kMaxVectorLanes || lane_.var) return false;
  Stmt body = n->body;
  Expr guard;
  if (auto* g = body.as<IfThenElseNode>(); g && !g->otherwise.defined()) {
    guard = g->cond;
    body = g->then;
  }
  if (!storesOnly(body)) return false;
  std::vector<const StoreNode*> stores;
  collectStores(body, &stores);
  lane_ = {n->var.node(), n->extent};
  bounds_[n->var.node()] = {0, n->extent - 1};
  if (!guard.defined()) {
    vectorStores(stores);
  } else {
    std::vector<Expr> cs;
    conjuncts(guard, &cs);
    Expr fixed, lanes;
    for (auto& c : cs) {
      bool mentions = false;
      postOrderVisit(c, [&](const Expr& x) { mentions |= x.as<VarNode>() == lane_.var; });
      Expr& side = mentions ? lanes : fixed;
      side = side.defined() ? (side && c) : c;
    }
    auto* join = llvm::BasicBlock::Create(ctx_, "guard.end", fn_);
    auto branch = [&](llvm::Value* cond) {
      auto* then = llvm::BasicBlock::Create(ctx_, "guard.then", fn_);
      b_.CreateCondBr(cond, then, join);
      b_.SetInsertPoint(then);
    };
    if (fixed.defined()) branch(value(fixed, false));
    if (lanes.defined()) {
      mask_ = value(lanes, true);
      branch(b_.CreateOrReduce(mask_));
    }
    vectorStores(stores);
    mask_ = nullptr;
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }
  bounds_.erase(n->var.node());
  lane_ = {};
  return true;
}

void LoopEmitter::vectorStores(const std::vector<const StoreNode*>& stores) {
  for (auto* st : stores) {
    llvm::Value* v = value(st->value, true);
    auto coeff = laneCoefficient(flatIndex(st->buffer, st->indices));
    llvm::Align align(storageBytes(st->buffer->dtype));
    if (coeff && *coeff == 1) {
      llvm::Value* base = nullptr;
      perLaneFirst([&] { base = address(st->buffer, st->indices, false); });
      if (!mask_) {
        b_.CreateAlignedStore(v, base, align);
      } else if (inBoundsLocal(st->buffer, st->indices)) {
        llvm::Value* old = b_.CreateAlignedLoad(v->getType(), base, align);
        b_.CreateAlignedStore(b_.CreateSelect(mask_, v, old), base, align);
      } else {
        b_.CreateMaskedStore(v, base, align, mask_);
      }
      continue;
    }
    perLane([&](int64_t l) {
      llvm::BasicBlock* skip = nullptr;
      if (mask_) {
        auto* on = llvm::BasicBlock::Create(ctx_, "lane.on", fn_);
        skip = llvm::BasicBlock::Create(ctx_, "lane.end", fn_);
        b_.CreateCondBr(b_.CreateExtractElement(mask_, b_.getInt64(l)), on, skip);
        b_.SetInsertPoint(on);
      }
      b_.CreateAlignedStore(b_.CreateExtractElement(v, b_.getInt64(l)),
                            address(st->buffer, st->indices, false), align);
      if (skip) {
        b_.CreateBr(skip);
        b_.SetInsertPoint(skip);
      }
    });
  }
}

// Whether an access is to a local buffer (one thread's) and in bounds for every lane and every
// value of the serial loops around it.
bool LoopEmitter::inBoundsLocal(const Buffer& buf, const std::vector<Expr>& indices) {
  if (buf->scope != MemScope::Local || indices.size() != buf->shape.size()) return false;
  for (size_t d = 0; d < indices.size(); ++d) {
    IntBound b{0, 0};
    if (!boundOf(indices[d], bounds_, &b) || b.lo < 0 || b.hi >= buf->shape[d]) return false;
  }
  return true;
}

} // namespace wm::codegen
