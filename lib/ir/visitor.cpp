// Default traversal of ExprVisitor / ExprMutator, and substitution.
#include <wm/ir/visitor.h>
#include <wm/support/error.h>

namespace wm::ir {

void ExprVisitor::visit(const Expr& e) {
  WM_CHECK(e.defined()) << "visit of an undefined expression";
  switch (e.kind()) {
#define WM_X(n)                                                                                    \
  case ExprKind::n: return visit##n(static_cast<const n##Node*>(e.get()));
    WM_EXPR_NODES(WM_X)
#undef WM_X
  }
}

void ExprVisitor::visitIntImm(const IntImmNode*) {}
void ExprVisitor::visitFloatImm(const FloatImmNode*) {}
void ExprVisitor::visitVar(const VarNode*) {}
void ExprVisitor::visitBinary(const BinaryNode* op) {
  visit(op->a);
  visit(op->b);
}
void ExprVisitor::visitCompare(const CompareNode* op) {
  visit(op->a);
  visit(op->b);
}
void ExprVisitor::visitLogical(const LogicalNode* op) {
  visit(op->a);
  visit(op->b);
}
void ExprVisitor::visitNot(const NotNode* op) {
  visit(op->a);
}
void ExprVisitor::visitSelect(const SelectNode* op) {
  visit(op->cond);
  visit(op->t);
  visit(op->f);
}
void ExprVisitor::visitCast(const CastNode* op) {
  visit(op->value);
}
void ExprVisitor::visitCall(const CallNode* op) {
  for (auto& a : op->args) visit(a);
}
void ExprVisitor::visitTensorRead(const TensorReadNode* op) {
  for (auto& i : op->indices) visit(i);
}
void ExprVisitor::visitBufferLoad(const BufferLoadNode* op) {
  for (auto& i : op->indices) visit(i);
}

Expr ExprMutator::mutate(const Expr& e) {
  WM_CHECK(e.defined()) << "mutate of an undefined expression";
  switch (e.kind()) {
#define WM_X(n)                                                                                    \
  case ExprKind::n: return mutate##n(static_cast<const n##Node*>(e.get()), e);
    WM_EXPR_NODES(WM_X)
#undef WM_X
  }
  return e;
}

Expr ExprMutator::mutateIntImm(const IntImmNode*, const Expr& self) {
  return self;
}
Expr ExprMutator::mutateFloatImm(const FloatImmNode*, const Expr& self) {
  return self;
}
Expr ExprMutator::mutateVar(const VarNode*, const Expr& self) {
  return self;
}
Expr ExprMutator::mutateBinary(const BinaryNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same(op->a) && b.same(op->b)) return self;
  return binary(op->op, a, b);
}
Expr ExprMutator::mutateCompare(const CompareNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same(op->a) && b.same(op->b)) return self;
  return compare(op->op, a, b);
}
Expr ExprMutator::mutateLogical(const LogicalNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same(op->a) && b.same(op->b)) return self;
  return logical(op->op, a, b);
}
Expr ExprMutator::mutateNot(const NotNode* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same(op->a) ? self : logicalNot(a);
}
Expr ExprMutator::mutateSelect(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->cond), t = mutate(op->t), f = mutate(op->f);
  if (c.same(op->cond) && t.same(op->t) && f.same(op->f)) return self;
  return select(c, t, f);
}
Expr ExprMutator::mutateCast(const CastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same(op->value) ? self : cast(op->dtype, v);
}
Expr ExprMutator::mutateCall(const CallNode* op, const Expr& self) {
  std::vector<Expr> args;
  bool changed = false;
  for (auto& a : op->args) {
    args.push_back(mutate(a));
    changed |= !args.back().same(a);
  }
  return changed ? call(op->func, std::move(args)) : self;
}
Expr ExprMutator::mutateTensorRead(const TensorReadNode* op, const Expr& self) {
  std::vector<Expr> idx;
  bool changed = false;
  for (auto& i : op->indices) {
    idx.push_back(mutate(i));
    changed |= !idx.back().same(i);
  }
  return changed ? read(op->tensor, std::move(idx)) : self;
}
Expr ExprMutator::mutateBufferLoad(const BufferLoadNode* op, const Expr& self) {
  std::vector<Expr> idx;
  bool changed = false;
  for (auto& i : op->indices) {
    idx.push_back(mutate(i));
    changed |= !idx.back().same(i);
  }
  return changed ? load(op->buffer, std::move(idx)) : self;
}

namespace {
class Substituter : public ExprMutator {
public:
  explicit Substituter(const std::unordered_map<const VarNode*, Expr>& m) : map_(m) {}
  Expr mutateVar(const VarNode* op, const Expr& self) override {
    auto it = map_.find(op);
    return it == map_.end() ? self : it->second;
  }

private:
  const std::unordered_map<const VarNode*, Expr>& map_;
};

} // namespace

Expr substitute(const Expr& e, const std::unordered_map<const VarNode*, Expr>& map) {
  if (map.empty()) return e;
  return Substituter(map).mutate(e);
}

namespace {
// Visits children first, then calls f with the handle of the node itself.
void postOrderImpl(const Expr& e, const std::function<void(const Expr&)>& f) {
  switch (e.kind()) {
  case ExprKind::IntImm:
  case ExprKind::FloatImm:
  case ExprKind::Var: break;
  case ExprKind::Binary: {
    auto* n = e.as<BinaryNode>();
    postOrderImpl(n->a, f);
    postOrderImpl(n->b, f);
    break;
  }
  case ExprKind::Compare: {
    auto* n = e.as<CompareNode>();
    postOrderImpl(n->a, f);
    postOrderImpl(n->b, f);
    break;
  }
  case ExprKind::Logical: {
    auto* n = e.as<LogicalNode>();
    postOrderImpl(n->a, f);
    postOrderImpl(n->b, f);
    break;
  }
  case ExprKind::Not: postOrderImpl(e.as<NotNode>()->a, f); break;
  case ExprKind::Select: {
    auto* n = e.as<SelectNode>();
    postOrderImpl(n->cond, f);
    postOrderImpl(n->t, f);
    postOrderImpl(n->f, f);
    break;
  }
  case ExprKind::Cast: postOrderImpl(e.as<CastNode>()->value, f); break;
  case ExprKind::Call:
    for (auto& a : e.as<CallNode>()->args) postOrderImpl(a, f);
    break;
  case ExprKind::TensorRead:
    for (auto& i : e.as<TensorReadNode>()->indices) postOrderImpl(i, f);
    break;
  case ExprKind::BufferLoad:
    for (auto& i : e.as<BufferLoadNode>()->indices) postOrderImpl(i, f);
    break;
  }
  f(e);
}
} // namespace

void postOrderVisit(const Expr& e, const std::function<void(const Expr&)>& f) {
  WM_CHECK(e.defined()) << "postOrderVisit of an undefined expression";
  postOrderImpl(e, f);
}

} // namespace wm::ir
