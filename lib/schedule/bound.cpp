// Iterator arithmetic and bound inference (see bound.h). Roadmap:
//  1. recomputeExtents / rootValues walk a stage's relations (forwards for extents, backwards
//     for values).
//  2. intervalOf bounds an index expression when some loop variables range over their loops
//     and the others are fixed: symbolic [lo, hi] by interval arithmetic.
//  3. inferBound visits stages from consumers to producers; an attached stage's region is
//     the union of the intervals of its consumer's reads, over the consumer's loops inside the
//     attach point.
#include <wm/ir/visitor.h>
#include <wm/schedule/bound.h>
#include <wm/support/error.h>

#include <algorithm>
#include <set>
#include <unordered_map>

namespace wm::sched {

using namespace wm::ir;

void recomputeExtents(StageNode& st, const std::vector<int64_t>& rootExtents) {
  WM_CHECK(static_cast<int>(rootExtents.size()) == st.numRoot) << "root extent count";
  for (int i = 0; i < st.numRoot; ++i) st.iters[i].extent = rootExtents[i];
  for (auto& r : st.relations) {
    if (r.kind == IterRelation::Kind::Split) {
      int64_t E = st.iters[r.parents[0]].extent, prod = 1;
      bool known = E > 0;
      for (int64_t l : r.lengths) {
        known &= l > 0;
        prod *= l > 0 ? l : 1;
      }
      int64_t rest = known ? (E + prod - 1) / prod : 0;
      size_t n = r.lengths.size();
      for (size_t k = 0; k < n; ++k)
        st.iters[r.children[r.innerToOuter ? k + 1 : k]].extent = r.lengths[k];
      st.iters[r.children[r.innerToOuter ? 0 : n]].extent = rest;
      // TVM's tightening: a part longer than what is left of the loop (an attached stage's
      // region smaller than its tiles) gets what is left, and the parts outside it extent 1,
      // instead of loops that a guard mostly skips.
      if (known && r.innerToOuter) {
        int64_t left = E;
        for (size_t k = n; k-- > 0;) {
          int64_t& e = st.iters[r.children[k + 1]].extent;
          e = std::min(e, left);
          left = (left + r.lengths[k] - 1) / r.lengths[k];
        }
      }
    } else {
      int64_t prod = 1;
      for (int p : r.parents)
        prod = (prod > 0 && st.iters[p].extent > 0) ? prod * st.iters[p].extent : 0;
      st.iters[r.children[0]].extent = prod;
    }
  }
}

RootValues rootValues(const StageNode& st, const std::vector<Var>& vars) {
  std::vector<Expr> value(st.iters.size());
  for (int id : st.leaves) value[id] = vars.at(id);
  RootValues out;
  for (auto it = st.relations.rbegin(); it != st.relations.rend(); ++it) {
    const auto& r = *it;
    if (r.kind == IterRelation::Kind::Split) {
      Expr v;
      int64_t covered = 1;
      for (int c : r.children) {
        WM_CHECK(value[c].defined()) << "iterator " << st.iters[c].name << " has no value";
        int64_t e = st.iters[c].extent;
        v = v.defined() ? v * static_cast<double>(e) + value[c] : value[c];
        covered *= e;
      }
      int p = r.parents[0];
      value[p] = v;
      if (covered != st.iters[p].extent)
        out.guards.push_back(
            {v < static_cast<double>(st.iters[p].extent), st.iters[p].kind == IterKind::Spatial});
    } else {
      Expr f = value[r.children[0]];
      WM_CHECK(f.defined()) << "fused iterator has no value";
      int64_t inner = 1;
      for (size_t k = r.parents.size(); k-- > 0;) {
        int p = r.parents[k];
        int64_t e = st.iters[p].extent;
        Expr q = inner == 1 ? f : f / static_cast<double>(inner);
        value[p] = k == 0 ? q : q % static_cast<double>(e);
        inner *= e;
      }
    }
  }
  for (int i = 0; i < st.numRoot; ++i) {
    WM_CHECK(value[i].defined()) << "root iterator " << st.iters[i].name << " has no value";
    out.values.push_back(value[i]);
  }
  return out;
}

Expr inlinedBody(const State& state, int i) {
  class Inliner : public ExprMutator {
  public:
    explicit Inliner(const State& s) : s_(s) {}
    Expr mutateTensorRead(const TensorReadNode* op, const Expr& self) override {
      Expr e = ExprMutator::mutateTensorRead(op, self);
      auto* r = e.as<TensorReadNode>();
      int st = s_.stageOf(r->tensor.get());
      if (st < 0 || s_.stage(st).loc != ComputeLoc::Inlined) return e;
      const auto& prod = *s_.stage(st).op;
      std::unordered_map<const VarNode*, Expr> map;
      for (size_t d = 0; d < prod.axes.size(); ++d) map[prod.axes[d].var.node()] = r->indices[d];
      return substitute(inlinedBody(s_, st), map);
    }

  private:
    const State& s_;
  };
  return Inliner(state).mutate(state.stage(i).op->body);
}

MemScope effectiveScope(const State& state, int i) {
  const auto& st = state.stage(i);
  if (st.loc != ComputeLoc::At || st.scope != MemScope::Global) return st.scope;
  bool block = false;
  for (int a = st.attachStage, upto = state.stage(a).leafPosition(st.attachIter); a >= 0;) {
    const auto& A = state.stage(a);
    for (int k = 0; k <= upto && k < A.numLeaves(); ++k) {
      Annotation an = A.leaf(k).annotation;
      if (an == Annotation::BlockX || an == Annotation::BlockY || an == Annotation::BlockZ)
        block = true;
      else if (isThreadBinding(an))
        return MemScope::Local;
    }
    if (A.loc != ComputeLoc::At) break;
    upto = state.stage(A.attachStage).leafPosition(A.attachIter);
    a = A.attachStage;
  }
  return block ? MemScope::Shared : MemScope::Global;
}

namespace {

struct Interval {
  Expr lo, hi;
  bool point() const { return lo.same(hi); }
};

bool mentionsAny(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& ranged) {
  bool found = false;
  postOrderVisit(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>(); v && ranged.count(v)) found = true;
  });
  return found;
}

// Interval of e when the variables in `ranged` run over [0, max] and the others are fixed.
bool intervalOf(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& ranged,
                Interval* out) {
  if (!mentionsAny(e, ranged)) {
    *out = {e, e};
    return true;
  }
  if (auto* v = e.as<VarNode>()) {
    *out = {intImm(0, e.dtype()), intImm(ranged.at(v), e.dtype())};
    return true;
  }
  auto* b = e.as<BinaryNode>();
  if (b) {
    int64_t c;
    Interval x, y;
    switch (b->op) {
    case BinaryOp::Add:
      if (!intervalOf(b->a, ranged, &x) || !intervalOf(b->b, ranged, &y)) return false;
      *out = {x.lo + y.lo, x.hi + y.hi};
      return true;
    case BinaryOp::Sub:
      if (!intervalOf(b->a, ranged, &x) || !intervalOf(b->b, ranged, &y)) return false;
      *out = {x.lo - y.hi, x.hi - y.lo};
      return true;
    case BinaryOp::Mul: {
      const Expr* other = nullptr;
      if (isConstInt(b->b, &c))
        other = &b->a;
      else if (isConstInt(b->a, &c))
        other = &b->b;
      if (!other || !intervalOf(*other, ranged, &x)) return false;
      Expr k = intImm(c, e.dtype());
      *out = c >= 0 ? Interval{x.lo * k, x.hi * k} : Interval{x.hi * k, x.lo * k};
      return true;
    }
    case BinaryOp::Div:
      if (!isConstInt(b->b, &c) || c <= 0 || !intervalOf(b->a, ranged, &x)) return false;
      *out = {x.lo / b->b, x.hi / b->b};
      return true;
    case BinaryOp::Mod:
      if (!isConstInt(b->b, &c) || c <= 0) return false;
      *out = {intImm(0, e.dtype()), intImm(c - 1, e.dtype())};
      return true;
    case BinaryOp::Min:
    case BinaryOp::Max:
      if (!intervalOf(b->a, ranged, &x) || !intervalOf(b->b, ranged, &y)) return false;
      *out = b->op == BinaryOp::Min ? Interval{min(x.lo, y.lo), min(x.hi, y.hi)}
                                    : Interval{max(x.lo, y.lo), max(x.hi, y.hi)};
      return true;
    }
  }
  if (auto* s = e.as<SelectNode>()) {
    Interval x, y;
    if (!intervalOf(s->t, ranged, &x) || !intervalOf(s->f, ranged, &y)) return false;
    *out = {min(x.lo, y.lo), max(x.hi, y.hi)};
    return true;
  }
  return false;
}

std::vector<std::vector<Expr>> readsOf(const Expr& body, const OperationNode* producer) {
  std::vector<std::vector<Expr>> out;
  postOrderVisit(body, [&](const Expr& e) {
    if (auto* r = e.as<TensorReadNode>(); r && r->tensor.get() == producer)
      out.push_back(r->indices);
  });
  return out;
}

StageRegion fullRegion(const OperationNode& op) {
  StageRegion r;
  for (int64_t d : op.shape) {
    r.base.push_back(intImm(0));
    r.extent.push_back(d);
  }
  r.full = true;
  return r;
}

// Region of stage p (attached at consumer c) needed per iteration of c's loops up to the
// attach point.
StageRegion attachedRegion(const State& state, int p, const Bounds& b) {
  const auto& P = state.stage(p);
  const auto& op = *P.op;
  int c = P.attachStage;
  const auto& C = state.stage(c);
  int pos = C.leafPosition(P.attachIter);
  StageRegion full = fullRegion(op);
  if (pos < 0) return full;
  RootValues rv = rootValues(C, b.vars[c]);
  std::unordered_map<const VarNode*, Expr> map;
  const auto& cop = *C.op;
  for (size_t d = 0; d < cop.axes.size(); ++d)
    map[cop.axes[d].var.node()] = b.regions[c].base[d] + rv.values[d];
  for (size_t r = 0; r < cop.reduceAxes.size(); ++r)
    map[cop.reduceAxes[r].var.node()] = rv.values[cop.axes.size() + r];
  std::unordered_map<const VarNode*, int64_t> ranged;
  for (int k = pos + 1; k < C.numLeaves(); ++k) {
    int64_t e = C.leaf(k).extent;
    if (e <= 0) return full;
    ranged[b.vars[c][C.leaves[k]].node()] = e - 1;
  }
  // Threads cooperate on shared and global buffers (TVM's rule): a shared stage's region spans
  // the enclosing threadIdx loops, a global one every thread-bound loop.
  const MemScope scope = effectiveScope(state, p);
  if (scope != MemScope::Local) {
    for (int a = c, upto = pos; a >= 0;) {
      const auto& A = state.stage(a);
      for (int k = 0; k <= upto && k < A.numLeaves(); ++k) {
        Annotation an = A.leaf(k).annotation;
        // (vthreads run one after another in each thread: a shared stage inside one is
        // filled per vthread, for that vthread's part, rather than for all of them each time)
        bool relax =
            scope == MemScope::Global
                ? isThreadBinding(an)
                : (isThreadBinding(an) && an != Annotation::BlockX && an != Annotation::BlockY &&
                   an != Annotation::BlockZ && an != Annotation::VThread);
        if (relax && A.leaf(k).extent > 0)
          ranged[b.vars[a][A.leaves[k]].node()] = A.leaf(k).extent - 1;
      }
      if (A.loc != ComputeLoc::At) break;
      upto = state.stage(A.attachStage).leafPosition(A.attachIter);
      a = A.attachStage;
    }
  }
  auto reads = readsOf(inlinedBody(state, c), P.op.get());
  if (reads.empty()) return full;
  StageRegion out;
  out.full = true;
  for (size_t d = 0; d < op.shape.size(); ++d) {
    Expr lo, hi;
    bool ok = true;
    for (auto& idx : reads) {
      Interval iv;
      if (!intervalOf(simplify(substitute(idx[d], map), b.varBounds), ranged, &iv)) {
        ok = false;
        break;
      }
      lo = lo.defined() ? min(lo, iv.lo) : iv.lo;
      hi = hi.defined() ? max(hi, iv.hi) : iv.hi;
    }
    int64_t E = op.shape[d];
    Expr base = intImm(0);
    if (ok) {
      lo = simplify(lo, b.varBounds);
      hi = simplify(hi, b.varBounds);
      Expr ext = simplify(hi - lo + 1, b.varBounds);
      // A constant extent, or else the largest one over the enclosing loops.
      int64_t e = 0;
      IntBound eb;
      if (!isConstInt(ext, &e) && boundOf(ext, b.varBounds, &eb)) e = eb.hi;
      if (e >= 1 && e < op.shape[d]) {
        E = e;
        base = lo;
      }
    }
    if (E != op.shape[d]) out.full = false;
    out.base.push_back(base);
    out.extent.push_back(E);
  }
  return out;
}

} // namespace

Bounds inferBound(State& state) {
  Bounds b;
  int n = state.numStages();
  b.vars.resize(n);
  b.regions.resize(n);
  std::set<std::string> used;
  for (int i = 0; i < n; ++i) {
    for (auto& it : state.stage(i).iters) {
      std::string name = it.name;
      for (int k = 1; used.count(name); ++k) name = it.name + "_" + std::to_string(k);
      used.insert(name);
      b.vars[i].push_back(Var(name));
    }
  }
  for (int i = n - 1; i >= 0; --i) {
    const auto& st = state.stage(i);
    if (st.isPlaceholder()) {
      b.regions[i] = fullRegion(*st.op);
      continue;
    }
    b.regions[i] = st.loc == ComputeLoc::At ? attachedRegion(state, i, b) : fullRegion(*st.op);
    std::vector<int64_t> root = b.regions[i].extent;
    for (auto& r : st.op->reduceAxes) root.push_back(r.extent);
    bool same = true;
    for (int k = 0; k < st.numRoot; ++k) same &= st.iters[k].extent == root[k];
    if (!same) recomputeExtents(state.mutableStage(i), root);
    const auto& now = state.stage(i);
    for (int id : now.leaves)
      if (now.iters[id].extent > 0)
        b.varBounds[b.vars[i][id].node()] = {0, now.iters[id].extent - 1};
  }
  return b;
}

} // namespace wm::sched
