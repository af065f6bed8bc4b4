// Pass simplify: simplifies every expression under the bounds of its enclosing loops, removes
// guards it can decide, and replaces loops of extent 1 (not thread-bound) by their body with
// the variable set to 0.
#include <wm/ir/simplify.h>
#include <wm/ir/visitor.h>
#include <wm/lower/lower.h>

namespace wm::lower {

using namespace wm::ir;

namespace {

class Substitute : public StmtMutator {
public:
  explicit Substitute(std::unordered_map<const VarNode*, Expr> m) : m_(std::move(m)) {}
  Expr mutateExpr(const Expr& e) override { return substitute(e, m_); }

private:
  std::unordered_map<const VarNode*, Expr> m_;
};

class Simplify : public StmtMutator {
public:
  Expr mutateExpr(const Expr& e) override { return simplify(e, bounds_); }

  Stmt mutateFor(const ForNode* op, const Stmt& self) override {
    if (op->extent == 1 && op->forKind != ForKind::ThreadBound) {
      Stmt body = Substitute({{op->var.node(), intImm(0, op->var.dtype())}}).mutate(op->body);
      return mutate(body);
    }
    bounds_[op->var.node()] = {0, op->extent - 1};
    Stmt r = StmtMutator::mutateFor(op, self);
    bounds_.erase(op->var.node());
    return r;
  }

  Stmt mutateIfThenElse(const IfThenElseNode* op, const Stmt& self) override {
    Expr c = mutateExpr(op->cond);
    int64_t v;
    if (isConstInt(c, &v)) return v ? mutate(op->then) : mutate(op->otherwise);
    Stmt t = mutate(op->then), e = mutate(op->otherwise);
    if (c.same(op->cond) && t.same(op->then) && e.same(op->otherwise)) return self;
    if (!t.defined()) t = makeSeq({});
    return makeIf(c, t, e);
  }

private:
  VarBounds bounds_;
};

} // namespace

Stmt simplifyStmt(const Stmt& s) {
  return Simplify().mutate(s);
}

} // namespace wm::lower
