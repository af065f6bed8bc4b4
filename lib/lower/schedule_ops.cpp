// Pass schedule_ops: a loop state to its loop nest (see lower.h). Roadmap:
//  1. Buffers: placeholders are inputs, stages without consumers outputs; other root stages
//     get a whole-tensor buffer at the top; attached stages a compact buffer (their region)
//     allocated inside the loop they are attached to.
//  2. Each stage's nest: one loop per leaf iterator, outermost first. Stages attached at a
//     loop are emitted inside it, before the rest of the body. A reduction's init is emitted
//     just before its first reduction loop, over the spatial loops nested deeper.
//  3. The computation: the op's body with inlined producers substituted, axes replaced by
//     their values in the leaf loops (+ region base), reads turned into buffer loads
//     (minus the producer's region base), guarded by the conditions of non-dividing splits
//     and of regions that may leave the tensor.
//  4. GPU: a shared buffer's fill is fenced by barriers, before (the previous iteration's
//     readers are done) and after (every thread's part is written).
#include <wm/ir/visitor.h>
#include <wm/lower/lower.h>
#include <wm/schedule/bound.h>
#include <wm/support/error.h>

#include <map>
#include <set>

namespace wm::lower {

using namespace wm::ir;
using namespace wm::sched;

namespace {

ForKind forKindOf(Annotation a) {
  switch (a) {
  case Annotation::None: return ForKind::Serial;
  case Annotation::Unroll: return ForKind::Unrolled;
  case Annotation::Vectorize: return ForKind::Vectorized;
  case Annotation::Parallel: return ForKind::Parallel;
  default: return ForKind::ThreadBound;
  }
}

class NestBuilder {
public:
  NestBuilder(State& state, LoweredFunc* func) : s_(state), func_(func) {
    b_ = inferBound(s_);
    makeBuffers();
  }

  Stmt build() {
    std::vector<Stmt> nests;
    for (int i = 0; i < s_.numStages(); ++i) {
      const auto& st = s_.stage(i);
      if (st.isPlaceholder() || st.loc != ComputeLoc::Root) continue;
      nests.push_back(emitStage(i));
    }
    Stmt body = makeSeq(nests);
    for (auto it = topAllocs_.rbegin(); it != topAllocs_.rend(); ++it)
      body = makeAllocate(*it, body);
    return body;
  }

private:
  void makeBuffers() {
    bufs_.resize(s_.numStages());
    std::set<std::string> used;
    auto unique = [&](std::string n) {
      std::string base = n;
      for (int k = 1; used.count(n); ++k) n = base + "_" + std::to_string(k);
      used.insert(n);
      return n;
    };
    for (int i = 0; i < s_.numStages(); ++i) {
      const auto& st = s_.stage(i);
      const auto& op = *st.op;
      if (st.loc == ComputeLoc::Inlined) continue;
      std::vector<std::pair<int64_t, int64_t>> align;
      if (!st.aligns.empty()) {
        align.assign(op.shape.size(), {0, 0});
        for (auto& a : st.aligns) align[a.axis] = {a.factor, a.offset};
      }
      if (st.isPlaceholder()) {
        bufs_[i] = makeBuffer(unique(op.name), op.dtype, op.shape, MemScope::Global);
        func_->inputs.push_back(bufs_[i]);
      } else if (s_.isOutput(i)) {
        bufs_[i] = makeBuffer(unique(op.name), op.dtype, op.shape, MemScope::Global, align);
        func_->outputs.push_back(bufs_[i]);
      } else if (st.loc == ComputeLoc::Root) {
        bufs_[i] = makeBuffer(unique(op.name), op.dtype, op.shape, st.scope, align);
        topAllocs_.push_back(bufs_[i]);
      } else {
        bufs_[i] = makeBuffer(unique(op.name), op.dtype, b_.regions[i].extent,
                              effectiveScope(s_, i), align);
      }
    }
  }

  // Reads of stage ops -> loads of their buffers, relative to the producer's region.
  Expr lowerReads(const Expr& e) {
    class Lowerer : public ExprMutator {
    public:
      explicit Lowerer(NestBuilder& nb) : nb_(nb) {}
      Expr mutateTensorRead(const TensorReadNode* op, const Expr& self) override {
        Expr e = ExprMutator::mutateTensorRead(op, self);
        auto* r = e.as<TensorReadNode>();
        int j = nb_.s_.stageOf(r->tensor.get());
        WM_CHECK(j >= 0 && nb_.bufs_[j])
            << "lowering: read of " << r->tensor->name << " has no buffer";
        std::vector<Expr> idx = r->indices;
        const auto& reg = nb_.b_.regions[j];
        if (nb_.s_.stage(j).loc == ComputeLoc::At)
          for (size_t d = 0; d < idx.size(); ++d) idx[d] = idx[d] - reg.base[d];
        return load(nb_.bufs_[j], idx);
      }

    private:
      NestBuilder& nb_;
    };
    return Lowerer(*this).mutate(e);
  }

  Stmt emitStage(int i) {
    const auto& st = s_.stage(i);
    const auto& op = *st.op;
    const auto& vars = b_.vars[i];
    RootValues rv = rootValues(st, vars);
    const auto& reg = b_.regions[i];
    size_t nsp = op.axes.size();
    std::unordered_map<const VarNode*, Expr> map;
    std::vector<Expr> storeIdx;
    for (size_t d = 0; d < nsp; ++d) {
      map[op.axes[d].var.node()] = reg.base[d] + rv.values[d];
      storeIdx.push_back(rv.values[d]);
    }
    for (size_t r = 0; r < op.reduceAxes.size(); ++r)
      map[op.reduceAxes[r].var.node()] = rv.values[nsp + r];
    Expr value = lowerReads(substitute(inlinedBody(s_, i), map));

    Expr allGuard, spatialGuard;
    auto addGuard = [](Expr& g, const Expr& c) { g = g.defined() ? (g && c) : c; };
    for (auto& g : rv.guards) {
      addGuard(allGuard, g.cond);
      if (g.spatial) addGuard(spatialGuard, g.cond);
    }
    if (st.loc == ComputeLoc::At && !reg.full) {
      for (size_t d = 0; d < nsp; ++d) {
        if (reg.extent[d] == op.shape[d]) continue;
        Expr abs = reg.base[d] + rv.values[d];
        Expr c = (abs >= 0.0) && (abs < static_cast<double>(op.shape[d]));
        addGuard(allGuard, c);
        addGuard(spatialGuard, c);
      }
    }
    auto guarded = [](const Expr& g, Stmt s) { return g.defined() ? makeIf(g, s) : s; };

    const Buffer& buf = bufs_[i];
    Stmt compute, init;
    if (!op.hasReduction()) {
      compute = guarded(allGuard, makeStore(buf, storeIdx, value));
    } else {
      Expr cur = load(buf, storeIdx);
      Expr combined = op.reduce == ReduceKind::Sum   ? cur + value
                      : op.reduce == ReduceKind::Max ? max(cur, value)
                                                     : min(cur, value);
      compute = guarded(allGuard, makeStore(buf, storeIdx, combined));
      init = guarded(spatialGuard, makeStore(buf, storeIdx, reduceIdentity(op.reduce, op.dtype)));
    }

    int n = st.numLeaves();
    int firstReduce = n;
    for (int p = 0; p < n; ++p)
      if (st.leaf(p).kind == IterKind::Reduce) {
        firstReduce = p;
        break;
      }
    auto loopOf = [&](int pos, Stmt body) {
      const Iterator& it = st.leaf(pos);
      ForKind k = forKindOf(it.annotation);
      Stmt loop = makeFor(vars[st.leaves[pos]], it.extent, k,
                          k == ForKind::ThreadBound ? annotationName(it.annotation) : "", body);
      if (it.autoUnrollMaxStep >= 0)
        loop = makeAttr("auto_unroll_max_step", it.autoUnrollMaxStep, loop);
      return loop;
    };
    Stmt initNest;
    if (init.defined()) {
      initNest = init;
      for (int p = n - 1; p > firstReduce; --p)
        if (st.leaf(p).kind == IterKind::Spatial) initNest = loopOf(p, initNest);
    }
    std::function<Stmt(int)> level = [&](int pos) -> Stmt {
      if (pos == n) return compute;
      Stmt inner = level(pos + 1);
      if (pos + 1 == firstReduce && initNest.defined()) inner = makeSeq({initNest, inner});
      // Stages attached at this loop, in stage order, each allocated around the rest.
      std::vector<int> here;
      for (int j = 0; j < s_.numStages(); ++j)
        if (s_.stage(j).loc == ComputeLoc::At && s_.stage(j).attachStage == i &&
            s_.stage(j).attachIter == st.leaves[pos])
          here.push_back(j);
      // A shared buffer is filled by the block's threads together: a barrier before the fill
      // (the previous iteration's readers are done) and one after it (the fill is complete).
      for (auto it = here.rbegin(); it != here.rend(); ++it)
        inner = makeAllocate(bufs_[*it],
                             bufs_[*it]->scope == MemScope::Shared
                                 ? makeSeq({makeBarrier(), emitStage(*it), makeBarrier(), inner})
                                 : makeSeq({emitStage(*it), inner}));
      return loopOf(pos, inner);
    };
    Stmt nest = level(0);
    if (firstReduce == 0 && initNest.defined()) nest = makeSeq({initNest, nest});
    return nest;
  }

  State& s_;
  LoweredFunc* func_;
  Bounds b_;
  std::vector<Buffer> bufs_;
  std::vector<Buffer> topAllocs_;
};

} // namespace

Stmt scheduleOps(const State& input, LoweredFunc* func) {
  for (int i = 0; i < input.numStages(); ++i)
    for (int id : input.stage(i).leaves)
      if (input.stage(i).iters[id].extent <= 0)
        throw UserError("cannot lower: loop " + input.stage(i).iters[id].name + " of stage " +
                        input.stage(i).op->name + " has an unknown extent (open split length)");
  State state = input;
  NestBuilder nb(state, func);
  return nb.build();
}

} // namespace wm::lower
