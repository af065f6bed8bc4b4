// Pass hoist_guards: loop unswitching of the guards of non-dividing splits, so that the full
// tiles run without them (CPU nests; a nest with thread-bound loops is left as it is).
//
// A guard `e < c` below loop v holds for every iteration of the loops under v when the part
// of e that depends on v and the loops around it (e_out), plus the largest value of the rest
// (e_in, over the loops inside v), is below c. That condition on the outer variables is tested
// once at the top of v's body:
//
//   for v:  if (e_out + max(e_in) < c) { body without the guard } else { body }
//
// Guards of one body that give the same condition share one test. The else branch keeps every
// guard and may be unswitched again at a deeper loop (the partial tile's inner loops), at most
// kMaxDepth times on a path, so the code grows linearly. At the outermost unswitched loop, two
// distinct tests (a tile partial along its rows, along its columns) get a copy per outcome,
// so a tile partial along one axis runs the other axis without guards. A guard is hoisted only
// where its condition depends on the loop's own variable (else a loop further out tests it), only
// when e splits into outer and inner terms (no term mixes both), and not when the test can never be
// true. A guard with no inner term (a partial tile's rows above a vectorized loop) is tested
// as it is, once instead of on every inner iteration. Vectorized and unrolled loops are not
// unswitched (their body is one lane or one copy). The fast branch lets the code generator emit
// the full tiles' vectorized loops as plain vector code (guarded ones become masked vectors).
#include <wm/ir/printer.h>
#include <wm/ir/simplify.h>
#include <wm/ir/visitor.h>
#include <wm/lower/lower.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace wm::lower {

using namespace wm::ir;

namespace {

constexpr int kMaxDepth = 3;        ///< unswitched loops on one path (else branches nested)
constexpr size_t kMaxTreeTests = 2; ///< tests unswitched one by one (a copy per outcome)

// e as a signed sum of terms (Add/Sub trees flattened).
void terms(const Expr& e, bool negate, std::vector<std::pair<Expr, bool>>* out) {
  if (auto* b = e.as<BinaryNode>(); b && (b->op == BinaryOp::Add || b->op == BinaryOp::Sub)) {
    terms(b->a, negate, out);
    terms(b->b, b->op == BinaryOp::Sub ? !negate : negate, out);
    return;
  }
  out->push_back({e, negate});
}

// The guards of one loop body that can be tested at its top: the tests (distinct, in the
// order met) and, per if statement, which of its conjuncts they make true.
struct Hoist {
  std::vector<Expr> tests;
  /// Per if statement: its conjunct (index) -> the test that decides it (index into tests).
  std::map<const IfThenElseNode*, std::map<size_t, size_t>> drops;
  bool exact = true; ///< every dropped conjunct is its test (no inner term)
};

class Collector {
public:
  Collector(const VarNode* v, const VarBounds& outer) : v_(v), outer_(outer) {}

  Hoist run(const Stmt& body) {
    visit(body);
    return std::move(h_);
  }

private:
  void visit(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
    case StmtKind::For: {
      auto* f = s.as<ForNode>();
      inner_[f->var.node()] = {0, f->extent - 1};
      visit(f->body);
      inner_.erase(f->var.node());
      return;
    }
    case StmtKind::Store:
    case StmtKind::Barrier: return;
    case StmtKind::Allocate: visit(s.as<AllocateNode>()->body); return;
    case StmtKind::Attr: visit(s.as<AttrNode>()->body); return;
    case StmtKind::Seq:
      for (auto& x : s.as<SeqNode>()->stmts) visit(x);
      return;
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseNode>();
      std::vector<Expr> cs;
      conjuncts(n->cond, &cs);
      // (With no loop in between the guard is tested once per iteration already.)
      for (size_t i = 0; i < cs.size() && !inner_.empty(); ++i) {
        bool exact = false;
        Expr t = test(cs[i], &exact);
        if (!t.defined()) continue;
        h_.exact &= exact;
        auto [it, fresh] = keys_.emplace(ir::toString(t), h_.tests.size());
        if (fresh) h_.tests.push_back(t);
        h_.drops[n][i] = it->second;
      }
      visit(n->then);
      visit(n->otherwise);
      return;
    }
    }
  }

  // The condition on the outer variables under which `c` holds for every inner iteration;
  // undefined if there is none worth testing here.
  Expr test(const Expr& c, bool* exact) const {
    auto* cmp = c.as<CompareNode>();
    if (!cmp || !isInt(cmp->a.dtype()) || !isInt(cmp->b.dtype())) return Expr();
    // e < 0 (strict) or e <= 0.
    bool strict = cmp->op == CompareOp::LT || cmp->op == CompareOp::GT;
    Expr e;
    switch (cmp->op) {
    case CompareOp::LT:
    case CompareOp::LE: e = cmp->a - cmp->b; break;
    case CompareOp::GT:
    case CompareOp::GE: e = cmp->b - cmp->a; break;
    default: return Expr();
    }
    std::vector<std::pair<Expr, bool>> ts;
    terms(simplify(e), false, &ts);
    Expr out = constLike(e, 0), in = constLike(e, 0);
    int64_t k = 0; // the constant terms, moved to the right-hand side
    bool mentionsV = false;
    for (auto& [t, neg] : ts) {
      if (int64_t value; isConstInt(t, &value)) {
        k += neg ? -value : value;
        continue;
      }
      bool hasOuter = false, hasInner = false, unknown = false;
      postOrderVisit(t, [&](const Expr& x) {
        auto* var = x.as<VarNode>();
        if (!var) return;
        if (outer_.count(var)) {
          hasOuter = true;
          mentionsV |= var == v_;
        } else if (inner_.count(var)) {
          hasInner = true;
        } else {
          unknown = true;
        }
      });
      if (unknown || (hasOuter && hasInner)) return Expr();
      Expr& side = hasInner ? in : out;
      side = neg ? side - t : side + t;
    }
    if (!mentionsV) return Expr();
    *exact = isConstInt(in);
    IntBound b{0, 0};
    if (!boundOf(simplify(in, inner_), inner_, &b)) return Expr();
    Expr t = simplify(compare(strict ? CompareOp::LT : CompareOp::LE, simplify(out),
                              constLike(out, -static_cast<double>(b.hi + k))),
                      outer_);
    int64_t v;
    if (isConstInt(t, &v) && v == 0) return Expr(); // never true: nothing to gain
    return t; // (always true: the guard is dropped without a test)
  }

  const VarNode* v_;
  const VarBounds& outer_;
  VarBounds inner_;
  Hoist h_;
  std::map<std::string, size_t> keys_; ///< a test's text -> its index
};

// The body with the hoisted conjuncts of its guards decided: removed where they hold, the
// guard's else branch where they do not.
class DropGuards : public StmtMutator {
public:
  /// hold: the tests in `held` (all when empty) hold and their conjuncts go; otherwise every
  /// hoisted guard fails and its else branch stays.
  DropGuards(const Hoist& h, bool hold, std::set<size_t> held = {})
      : h_(h), hold_(hold), held_(std::move(held)) {}
  Stmt mutateIfThenElse(const IfThenElseNode* op, const Stmt& self) override {
    auto it = h_.drops.find(op);
    if (it == h_.drops.end()) return StmtMutator::mutateIfThenElse(op, self);
    if (!hold_) return mutate(op->otherwise);
    std::vector<Expr> cs;
    conjuncts(op->cond, &cs);
    Expr rest;
    for (size_t i = 0; i < cs.size(); ++i) {
      auto d = it->second.find(i);
      bool drop = d != it->second.end() && (held_.empty() || held_.count(d->second));
      if (!drop) rest = rest.defined() ? (rest && cs[i]) : cs[i];
    }
    Stmt t = mutate(op->then);
    if (!rest.defined()) return t.defined() ? t : makeSeq({});
    Stmt e = mutate(op->otherwise);
    return makeIf(rest, t.defined() ? t : makeSeq({}), e);
  }

private:
  const Hoist& h_;
  bool hold_;
  std::set<size_t> held_;
};

class HoistGuards : public StmtMutator {
public:
  Stmt mutateFor(const ForNode* op, const Stmt& self) override {
    bounds_[op->var.node()] = {0, op->extent - 1};
    Stmt body = op->body;
    Stmt r;
    if (depth_ < kMaxDepth && op->forKind != ForKind::Vectorized &&
        op->forKind != ForKind::Unrolled) {
      // The test goes inside the allocations at the top of the body (one buffer each).
      std::vector<const AllocateNode*> allocs;
      Stmt inner = body;
      while (auto* a = inner.as<AllocateNode>()) {
        allocs.push_back(a);
        inner = a->body;
      }
      Hoist h = Collector(op->var.node(), bounds_).run(inner);
      if (!h.tests.empty()) {
        Expr test;
        for (const auto& t : h.tests)
          if (!isConstInt(t)) test = test.defined() ? (test && t) : t;
        Stmt fast = mutate(DropGuards(h, true).mutate(inner));
        if (!fast.defined()) fast = makeSeq({});
        Stmt s = fast;
        std::vector<size_t> open; // the tests that are not always true
        std::set<size_t> always;
        for (size_t i = 0; i < h.tests.size(); ++i) {
          if (isConstInt(h.tests[i]))
            always.insert(i);
          else
            open.push_back(i);
        }
        // A copy of the body where the tests in `held` hold (their guards dropped), unswitched
        // again further in.
        auto partial = [&](std::set<size_t> held) {
          held.insert(always.begin(), always.end());
          ++depth_;
          Stmt r = mutate(DropGuards(h, true, held).mutate(inner));
          --depth_;
          return r.defined() ? r : makeSeq({});
        };
        if (open.size() == kMaxTreeTests && depth_ == 0) {
          // Two tests (a tile partial along rows, along columns): one copy for each outcome,
          // so a tile partial along one axis keeps the other axis's fast code.
          ++depth_;
          Stmt slow = mutate(inner);
          --depth_;
          s = makeIf(h.tests[open[0]], makeIf(h.tests[open[1]], fast, partial({open[0]})),
                     makeIf(h.tests[open[1]], partial({open[1]}), slow));
        } else if (test.defined()) {
          // One exact test: where it fails, every guard it decides fails too.
          Stmt slow;
          if (h.exact && h.tests.size() == 1) {
            slow = mutate(DropGuards(h, false).mutate(inner));
          } else {
            ++depth_;
            slow = mutate(inner);
            --depth_;
          }
          s = makeIf(test, fast, slow);
        }
        for (auto it = allocs.rbegin(); it != allocs.rend(); ++it)
          s = makeAllocate((*it)->buffer, s);
        r = makeFor(op->var, op->extent, op->forKind, op->threadTag, s);
      }
    }
    if (!r.defined()) r = StmtMutator::mutateFor(op, self);
    bounds_.erase(op->var.node());
    return r;
  }

private:
  VarBounds bounds_;
  int depth_ = 0;
};

} // namespace

Stmt hoistGuards(const Stmt& s) {
  bool gpu = anyStmt(s, [](const Stmt& x) {
    auto* f = x.as<ForNode>();
    return (f && f->forKind == ForKind::ThreadBound) || x.as<BarrierNode>();
  });
  if (gpu) return s;
  return HoistGuards().mutate(s);
}

} // namespace wm::lower
