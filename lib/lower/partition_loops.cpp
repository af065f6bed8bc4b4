// Pass partition_loops: index-set splitting of serial loops at the points where a select's
// condition changes with the loop variable (TVM's loop partition, for the same reason).
//
// A padding stage stores `select(h >= 1 && h < 113 && w >= 1 && w < 113, data[h - 1, w - 1], 0)`.
// As written every element evaluates the condition and the code generator must load
// speculatively, with clamped indices (non-affine: LLVM gathers). Split at w = 1 and w = 113,
// the middle loop's conjuncts on w are decided (the simplify pass that follows folds them
// under the new loop's bounds) and its loads have affine, unclamped indices; the edges keep
// the full condition. A conjunct takes part when it compares an affine function of the loop
// variable, with constant coefficient and offset, to a constant; a loop splits at two such
// points at most (three loops), only when the copies hold at most kMaxStores stores (nested
// splits multiply), and only when its body holds no barrier. Parallel,
// vectorized, unrolled and thread-bound loops are left alone (their iterations are lanes,
// copies or threads).
#include <wm/ir/simplify.h>
#include <wm/ir/visitor.h>
#include <wm/lower/lower.h>
#include <wm/support/int_math.h>

#include <algorithm>
#include <set>

namespace wm::lower {

using namespace wm::ir;

namespace {

constexpr size_t kMaxSplits = 2;
constexpr int64_t kMaxStores = 64; ///< stores in the copies of one split loop's body

// e = coef * v + offset with constant coef and offset (checked at v = 0, 1, 2 after the
// structure check: only +, - and * by constants lead to v).
bool affine(const Expr& e, const VarNode* v, int64_t* coef, int64_t* offset) {
  bool ok = true;
  std::function<void(const Expr&)> check = [&](const Expr& x) {
    if (!ok) return;
    if (x.as<VarNode>()) return;
    if (auto* b = x.as<BinaryNode>()) {
      int64_t c;
      if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
        check(b->a);
        check(b->b);
        return;
      }
      if (b->op == BinaryOp::Mul && (isConstInt(b->a, &c) || isConstInt(b->b, &c))) {
        check(b->a);
        check(b->b);
        return;
      }
    }
    bool mentions = false;
    postOrderVisit(x, [&](const Expr& y) { mentions |= y.as<VarNode>() == v; });
    ok = !mentions;
  };
  check(e);
  if (!ok) return false;
  int64_t at[3];
  for (int k = 0; k < 3; ++k)
    if (!isConstInt(simplify(substitute(e, {{v, intImm(k, e.dtype())}})), &at[k])) return false;
  if (at[2] - at[1] != at[1] - at[0] || at[1] == at[0]) return false;
  *coef = at[1] - at[0];
  *offset = at[0];
  return true;
}

bool holds(CompareOp op, int64_t x) { // x op 0
  switch (op) {
  case CompareOp::LT: return x < 0;
  case CompareOp::LE: return x <= 0;
  case CompareOp::GT: return x > 0;
  case CompareOp::GE: return x >= 0;
  case CompareOp::EQ: return x == 0;
  case CompareOp::NE: return x != 0;
  }
  return false;
}

// The iterations i in (0, extent) where `coef * i + offset  op  0` turns (coef != 0, so the
// left side is strictly monotone): at most one for an ordering, found by bisection; the
// solution and the one after it for == and !=. Nothing when the arithmetic would overflow.
void turns(CompareOp op, int64_t coef, int64_t offset, int64_t extent, std::set<int64_t>* out) {
  int64_t last, lastValue;
  if (!checkedMul(coef, extent - 1, &last) || !checkedAdd(last, offset, &lastValue)) return;
  if (op == CompareOp::EQ || op == CompareOp::NE) {
    if (offset % coef != 0) return;
    int64_t i = -offset / coef;
    if (i >= 1 && i < extent) out->insert(i);
    if (i + 1 >= 1 && i + 1 < extent) out->insert(i + 1);
    return;
  }
  bool first = holds(op, offset);
  if (holds(op, lastValue) == first) return;
  int64_t lo = 0, hi = extent - 1; // holds(lo) == first, holds(hi) != first
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (holds(op, coef * mid + offset) == first ? lo : hi) = mid;
  }
  out->insert(hi);
}

// The iterations in (0, extent) where a conjunct of a select condition under the loop turns.
void splitPoints(const Stmt& body, const VarNode* v, int64_t extent, std::set<int64_t>* out) {
  auto fromExpr = [&](const Expr& e) {
    postOrderVisit(e, [&](const Expr& x) {
      auto* sel = x.as<SelectNode>();
      if (!sel) return;
      std::vector<Expr> cs;
      conjuncts(sel->cond, &cs);
      for (auto& c : cs) {
        auto* cmp = c.as<CompareNode>();
        if (!cmp || !isInt(cmp->a.dtype()) || !isInt(cmp->b.dtype())) continue;
        int64_t coef, offset;
        if (!affine(cmp->a - cmp->b, v, &coef, &offset)) continue;
        turns(cmp->op, coef, offset, extent, out);
      }
    });
  };
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
    case StmtKind::For: walk(s.as<ForNode>()->body); return;
    case StmtKind::Store: {
      auto* st = s.as<StoreNode>();
      fromExpr(st->value);
      return;
    }
    case StmtKind::Allocate: walk(s.as<AllocateNode>()->body); return;
    case StmtKind::Attr: walk(s.as<AttrNode>()->body); return;
    case StmtKind::Seq:
      for (auto& x : s.as<SeqNode>()->stmts) walk(x);
      return;
    case StmtKind::IfThenElse:
      walk(s.as<IfThenElseNode>()->then);
      walk(s.as<IfThenElseNode>()->otherwise);
      return;
    case StmtKind::Barrier: return;
    }
  };
  walk(body);
}

class SubstituteStmt : public StmtMutator {
public:
  SubstituteStmt(const VarNode* v, Expr e) : m_{{v, std::move(e)}} {}
  Expr mutateExpr(const Expr& e) override { return substitute(e, m_); }

private:
  std::unordered_map<const VarNode*, Expr> m_;
};

class Partition : public StmtMutator {
public:
  bool changed = false;

  Stmt mutateFor(const ForNode* op, const Stmt& self) override {
    Stmt r = StmtMutator::mutateFor(op, self);
    auto* f = r.as<ForNode>();
    if (!f || f->forKind != ForKind::Serial || f->extent < 2 ||
        anyStmt(f->body, [](const Stmt& s) { return s.kind() == StmtKind::Barrier; }))
      return r;
    std::set<int64_t> points;
    splitPoints(f->body, f->var.node(), f->extent, &points);
    if (points.empty() || points.size() > kMaxSplits) return r;
    int64_t stores = 0;
    anyStmt(f->body,
            [&](const Stmt& s) { return s.kind() == StmtKind::Store && ++stores > kMaxStores; });
    if (stores * static_cast<int64_t>(points.size() + 1) > kMaxStores) return r;
    std::vector<int64_t> cuts{0};
    cuts.insert(cuts.end(), points.begin(), points.end());
    cuts.push_back(f->extent);
    std::vector<Stmt> loops;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      Var v(f->var.name(), f->var.dtype());
      Stmt body = SubstituteStmt(f->var.node(), v + intImm(cuts[k], v.dtype())).mutate(f->body);
      loops.push_back(makeFor(v, cuts[k + 1] - cuts[k], ForKind::Serial, "", body));
    }
    changed = true;
    return makeSeq(loops);
  }
};

} // namespace

Stmt partitionLoops(const Stmt& s, bool* changed) {
  Partition p;
  Stmt r = p.mutate(s);
  if (changed) *changed = p.changed;
  return r;
}

} // namespace wm::lower
