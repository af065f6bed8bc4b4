// Pass remove_no_ops: drops statements that do nothing (empty sequences, and loops, ifs,
// allocations and pragmas around nothing).
#include <wm/lower/lower.h>

namespace wm::lower {

namespace {

bool empty(const Stmt& s) {
  if (!s.defined()) return true;
  auto* q = s.as<SeqNode>();
  return q && q->stmts.empty();
}

class RemoveNoOps : public StmtMutator {
public:
  Stmt mutateFor(const ForNode* op, const Stmt& self) override {
    Stmt r = StmtMutator::mutateFor(op, self);
    return empty(r) || empty(r.as<ForNode>()->body) ? Stmt() : r;
  }
  Stmt mutateIfThenElse(const IfThenElseNode* op, const Stmt& self) override {
    Stmt t = mutate(op->then), e = mutate(op->otherwise);
    if (empty(t) && empty(e)) return Stmt();
    if (t.same(op->then) && e.same(op->otherwise)) return self;
    if (empty(t)) return makeIf(ir::logicalNot(op->cond), e);
    return makeIf(op->cond, t, empty(e) ? Stmt() : e);
  }
  Stmt mutateSeq(const SeqNode* op, const Stmt& self) override {
    Stmt r = StmtMutator::mutateSeq(op, self);
    return empty(r) ? Stmt() : r;
  }
  Stmt mutateAllocate(const AllocateNode* op, const Stmt& self) override {
    Stmt r = StmtMutator::mutateAllocate(op, self);
    return empty(r) ? Stmt() : r;
  }
  Stmt mutateAttr(const AttrNode* op, const Stmt& self) override {
    Stmt r = StmtMutator::mutateAttr(op, self);
    return empty(r) ? Stmt() : r;
  }
};

} // namespace

Stmt removeNoOps(const Stmt& s) {
  Stmt r = RemoveNoOps().mutate(s);
  return r.defined() ? r : makeSeq({});
}

} // namespace wm::lower
