// Loop-nest IR: constructors, mutator and printer.
#include <wm/ir/printer.h>
#include <wm/lower/stmt.h>
#include <wm/support/error.h>

#include <sstream>

namespace wm::lower {

using namespace wm::ir;

const char* forKindName(ForKind k) {
  switch (k) {
  case ForKind::Serial: return "serial";
  case ForKind::Parallel: return "parallel";
  case ForKind::Vectorized: return "vectorized";
  case ForKind::Unrolled: return "unrolled";
  case ForKind::ThreadBound: return "thread";
  }
  return "?";
}

Stmt makeFor(Var var, int64_t extent, ForKind kind, std::string threadTag, Stmt body) {
  WM_CHECK(extent >= 1) << "loop " << var.name() << " of extent " << extent;
  WM_CHECK(body.defined()) << "loop " << var.name() << " without body";
  WM_CHECK((kind == ForKind::ThreadBound) == !threadTag.empty()) << "thread tag mismatch";
  return Stmt(std::make_shared<ForNode>(std::move(var), extent, kind, std::move(threadTag),
                                        std::move(body)));
}

Stmt makeStore(Buffer b, std::vector<Expr> indices, Expr value) {
  WM_CHECK(b && indices.size() == b->shape.size()) << "store rank mismatch";
  WM_CHECK(value.dtype() == b->dtype) << "store of " << dtypeName(value.dtype()) << " into "
                                      << dtypeName(b->dtype) << " buffer " << b->name;
  for (auto& i : indices) WM_CHECK(isInt(i.dtype())) << "non-integer store index";
  return Stmt(std::make_shared<StoreNode>(std::move(b), std::move(indices), std::move(value)));
}

Stmt makeAllocate(Buffer b, Stmt body) {
  WM_CHECK(b && body.defined()) << "bad allocate";
  return Stmt(std::make_shared<AllocateNode>(std::move(b), std::move(body)));
}

Stmt makeIf(Expr cond, Stmt then, Stmt otherwise) {
  WM_CHECK(cond.dtype() == DType::Bool) << "if condition is not bool";
  WM_CHECK(then.defined()) << "if without a then branch";
  return Stmt(
      std::make_shared<IfThenElseNode>(std::move(cond), std::move(then), std::move(otherwise)));
}

Stmt makeSeq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s.defined()) continue;
    if (auto* q = s.as<SeqNode>())
      flat.insert(flat.end(), q->stmts.begin(), q->stmts.end());
    else
      flat.push_back(s);
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<SeqNode>(std::move(flat)));
}

Stmt makeAttr(std::string key, int64_t value, Stmt body) {
  return Stmt(std::make_shared<AttrNode>(std::move(key), value, std::move(body)));
}

Stmt makeBarrier() {
  return Stmt(std::make_shared<BarrierNode>());
}

bool anyStmt(const Stmt& s, const std::function<bool(const Stmt&)>& pred) {
  if (!s.defined()) return false;
  if (pred(s)) return true;
  switch (s.kind()) {
  case StmtKind::For: return anyStmt(s.as<ForNode>()->body, pred);
  case StmtKind::Allocate: return anyStmt(s.as<AllocateNode>()->body, pred);
  case StmtKind::IfThenElse:
    return anyStmt(s.as<IfThenElseNode>()->then, pred) ||
           anyStmt(s.as<IfThenElseNode>()->otherwise, pred);
  case StmtKind::Seq:
    for (auto& x : s.as<SeqNode>()->stmts)
      if (anyStmt(x, pred)) return true;
    return false;
  case StmtKind::Attr: return anyStmt(s.as<AttrNode>()->body, pred);
  case StmtKind::Store:
  case StmtKind::Barrier: return false;
  }
  return false;
}

Stmt StmtMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define WM_X(n)                                                                                    \
  case StmtKind::n: return mutate##n(static_cast<const n##Node*>(s.get()), s);
    WM_STMT_NODES(WM_X)
#undef WM_X
  }
  return s;
}

Stmt StmtMutator::mutateFor(const ForNode* op, const Stmt& self) {
  Stmt b = mutate(op->body);
  if (b.same(op->body)) return self;
  if (!b.defined()) return b;
  return makeFor(op->var, op->extent, op->forKind, op->threadTag, b);
}

Stmt StmtMutator::mutateStore(const StoreNode* op, const Stmt& self) {
  std::vector<Expr> idx;
  bool changed = false;
  for (auto& i : op->indices) {
    idx.push_back(mutateExpr(i));
    changed |= !idx.back().same(i);
  }
  Expr v = mutateExpr(op->value);
  changed |= !v.same(op->value);
  return changed ? makeStore(op->buffer, idx, v) : self;
}

Stmt StmtMutator::mutateAllocate(const AllocateNode* op, const Stmt& self) {
  Stmt b = mutate(op->body);
  if (b.same(op->body)) return self;
  if (!b.defined()) return b;
  return makeAllocate(op->buffer, b);
}

Stmt StmtMutator::mutateIfThenElse(const IfThenElseNode* op, const Stmt& self) {
  Expr c = mutateExpr(op->cond);
  Stmt t = mutate(op->then), e = mutate(op->otherwise);
  if (c.same(op->cond) && t.same(op->then) && e.same(op->otherwise)) return self;
  if (!t.defined()) t = makeSeq({});
  return makeIf(c, t, e);
}

Stmt StmtMutator::mutateSeq(const SeqNode* op, const Stmt& self) {
  std::vector<Stmt> out;
  bool changed = false;
  for (auto& s : op->stmts) {
    out.push_back(mutate(s));
    changed |= !out.back().same(s);
  }
  return changed ? makeSeq(out) : self;
}

Stmt StmtMutator::mutateAttr(const AttrNode* op, const Stmt& self) {
  Stmt b = mutate(op->body);
  if (b.same(op->body)) return self;
  if (!b.defined()) return b;
  return makeAttr(op->key, op->value, b);
}

Stmt StmtMutator::mutateBarrier(const BarrierNode*, const Stmt& self) {
  return self;
}

namespace {
void print(std::ostream& os, const Stmt& s, int indent) {
  std::string pad(indent * 2, ' ');
  if (!s.defined()) return;
  switch (s.kind()) {
  case StmtKind::For: {
    auto* n = s.as<ForNode>();
    os << pad << "for " << n->var.name() << " in [0, " << n->extent << ")";
    if (n->forKind == ForKind::ThreadBound)
      os << " " << n->threadTag;
    else if (n->forKind != ForKind::Serial)
      os << " " << forKindName(n->forKind);
    os << "\n";
    print(os, n->body, indent + 1);
    return;
  }
  case StmtKind::Store: {
    auto* n = s.as<StoreNode>();
    os << pad << n->buffer->name << "[";
    for (size_t i = 0; i < n->indices.size(); ++i) os << (i ? ", " : "") << toString(n->indices[i]);
    os << "] = " << toString(n->value) << "\n";
    return;
  }
  case StmtKind::Allocate: {
    auto* n = s.as<AllocateNode>();
    os << pad << "allocate " << n->buffer->name << ": "
       << typeString(n->buffer->dtype, n->buffer->shape) << " " << memScopeName(n->buffer->scope);
    bool rowMajor = true;
    int64_t st = 1;
    for (size_t d = n->buffer->shape.size(); d-- > 0;) {
      rowMajor &= n->buffer->strides[d] == st;
      st *= n->buffer->shape[d];
    }
    if (!rowMajor) {
      os << " strides [";
      for (size_t d = 0; d < n->buffer->strides.size(); ++d)
        os << (d ? ", " : "") << n->buffer->strides[d];
      os << "]";
    }
    os << "\n";
    print(os, n->body, indent);
    return;
  }
  case StmtKind::IfThenElse: {
    auto* n = s.as<IfThenElseNode>();
    os << pad << "if " << toString(n->cond) << "\n";
    print(os, n->then, indent + 1);
    if (n->otherwise.defined()) {
      os << pad << "else\n";
      print(os, n->otherwise, indent + 1);
    }
    return;
  }
  case StmtKind::Seq:
    for (auto& x : s.as<SeqNode>()->stmts) print(os, x, indent);
    return;
  case StmtKind::Attr: {
    auto* n = s.as<AttrNode>();
    os << pad << "// " << n->key << " = " << n->value << "\n";
    print(os, n->body, indent);
    return;
  }
  case StmtKind::Barrier: os << pad << "barrier\n"; return;
  }
}
} // namespace

std::string toString(const Stmt& s) {
  std::ostringstream os;
  print(os, s, 0);
  return os.str();
}

} // namespace wm::lower
