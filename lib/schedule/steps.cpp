// Transform steps: application to the loop state, replay, printing and JSON. Roadmap:
//  1. apply<Kind>(State&, const KindStep&) for every kind of WM_STEP_KINDS; each validates
//     first and returns an error message, or edits the state. applyStep runs them on a copy,
//     so a failing step never leaves a half-edited state.
//  2. Steps that rewrite the DAG (cache read/write, rfactor) build new ops and rebuild every
//     op downstream so that reads point at the new ones (rebuildConsumers).
//  3. Printing and JSON, one field order per kind.
#include <wm/ir/printer.h>
#include <wm/ir/visitor.h>
#include <wm/schedule/bound.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>
#include <wm/support/strings.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <sstream>
#include <unordered_map>

namespace wm::sched {

using namespace wm::ir;

namespace {

// Collects an error message; `return fail() << ...` style.
class Err {
public:
  template <typename T> Err& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  operator std::string() const { return os_.str(); }

private:
  std::ostringstream os_;
};

std::string checkStage(const State& s, int stage) {
  if (stage < 0 || stage >= s.numStages())
    return Err() << "stage " << stage << " out of range (" << s.numStages() << " stages)";
  return "";
}

std::string checkLoop(const State& s, int stage, int iter) {
  std::string e = checkStage(s, stage);
  if (!e.empty()) return e;
  const auto& st = s.stage(stage);
  if (st.isPlaceholder())
    return Err() << "stage " << stage << " (" << st.op->name << ") is a placeholder";
  if (iter < 0 || iter >= st.numLeaves())
    return Err() << "loop " << iter << " out of range for stage " << stage << " (" << st.op->name
                 << " has " << st.numLeaves() << " loops)";
  return "";
}

// Re-points attachments to iterator `from` of stage `stage` at `to`.
void moveAttachments(State& s, int stage, const std::vector<int>& from, int to) {
  for (int i = 0; i < s.numStages(); ++i) {
    const auto& st = s.stage(i);
    if (st.loc == ComputeLoc::At && st.attachStage == stage &&
        std::find(from.begin(), from.end(), st.attachIter) != from.end())
      s.mutableStage(i).attachIter = to;
  }
}

bool hasAttached(const State& s, int stage) {
  for (int i = 0; i < s.numStages(); ++i)
    if (s.stage(i).loc == ComputeLoc::At && s.stage(i).attachStage == stage) return true;
  return false;
}

// Replaces ops in `repl` (old -> new) and rebuilds every op that reads a replaced op.
void rebuildConsumers(State& s, std::unordered_map<const OperationNode*, Tensor> repl) {
  class Repoint : public ExprMutator {
  public:
    explicit Repoint(const std::unordered_map<const OperationNode*, Tensor>& m) : m_(m) {}
    Expr mutateTensorRead(const TensorReadNode* op, const Expr& self) override {
      Expr e = ExprMutator::mutateTensorRead(op, self);
      auto* r = e.as<TensorReadNode>();
      // Follow chains: an op replaced twice in one rewrite maps old -> mid -> new.
      const Tensor* to = nullptr;
      for (auto it = m_.find(r->tensor.get()); it != m_.end(); it = m_.find(it->second.get()))
        to = &it->second;
      return to ? read(*to, r->indices) : e;
    }

  private:
    const std::unordered_map<const OperationNode*, Tensor>& m_;
  };
  for (int i = 0; i < s.numStages(); ++i) {
    const auto& op = s.stage(i).op;
    if (!op->isCompute()) continue;
    Expr body = Repoint(repl).mutate(op->body);
    if (body.same(op->body)) continue;
    Tensor fresh = withBody(*op, body, op->name);
    repl[op.get()] = fresh;
    s.mutableStage(i).op = fresh;
  }
}

// ---- loop transforms ----

std::string applySplitLengths(State& s, int stage, int iter, const std::vector<int64_t>& lengths,
                              bool innerToOuter) {
  std::string e = checkLoop(s, stage, iter);
  if (!e.empty()) return e;
  if (lengths.empty()) return "split needs at least one length";
  for (int64_t l : lengths) {
    if (l < 0) return Err() << "split length " << l << " is negative";
    if (l > kMaxSplitLength)
      return Err() << "split length " << l << " is larger than any loop (" << kMaxSplitLength
                   << ")";
  }
  const auto& cst = s.stage(stage);
  int parent = cst.leaves[iter];
  const Iterator& p = cst.iters[parent];
  // Ansor's rule: the known lengths multiply to at most the loop's extent (longer splits only
  // add empty iterations, and absurd ones overflow the loop arithmetic).
  if (p.extent > 0) {
    int64_t prod = 1;
    for (int64_t l : lengths) {
      if (l == 0) continue;
      if (l > p.extent)
        return Err() << "split length " << l << " exceeds the loop's extent " << p.extent;
      prod *= l; // both <= extent: no overflow
      if (prod > p.extent)
        return Err() << "split lengths multiply to " << prod << ", more than the loop's extent "
                     << p.extent;
    }
  }
  if (p.annotation != Annotation::None)
    return Err() << "cannot split loop " << p.name << ": it is annotated "
                 << annotationName(p.annotation);
  StageNode& st = s.mutableStage(stage);
  IterRelation rel;
  rel.kind = IterRelation::Kind::Split;
  rel.parents = {parent};
  rel.lengths = lengths;
  rel.innerToOuter = innerToOuter;
  std::string base = st.iters[parent].name;
  for (size_t k = 0; k <= lengths.size(); ++k) {
    Iterator child;
    child.name = base + "." + std::to_string(k);
    child.kind = st.iters[parent].kind;
    rel.children.push_back(static_cast<int>(st.iters.size()));
    st.iters.push_back(child);
  }
  st.relations.push_back(rel);
  st.leaves.erase(st.leaves.begin() + iter);
  st.leaves.insert(st.leaves.begin() + iter, rel.children.begin(), rel.children.end());
  std::vector<int64_t> root;
  for (int i = 0; i < st.numRoot; ++i) root.push_back(st.iters[i].extent);
  recomputeExtents(st, root);
  moveAttachments(s, stage, {parent}, rel.children.back());
  return "";
}

std::string apply(State& s, const SplitStep& x) {
  return applySplitLengths(s, x.stage, x.iter, x.lengths, x.innerToOuter);
}

const SplitStep* splitAt(const State& s, int stepId, std::string* err) {
  if (stepId < 0 || stepId >= static_cast<int>(s.steps().size())) {
    *err = Err() << "source step " << stepId << " out of range (" << s.steps().size() << " steps)";
    return nullptr;
  }
  auto* sp = std::get_if<SplitStep>(&s.steps()[stepId]);
  if (!sp)
    *err = Err() << "source step " << stepId << " is " << stepTag(s.steps()[stepId]) << ", not SP";
  return sp;
}

std::string apply(State& s, const FollowSplitStep& x) {
  std::string err;
  const SplitStep* src = splitAt(s, x.srcStep, &err);
  if (!src) return err;
  int n = static_cast<int>(src->lengths.size());
  if (x.nSplit < 1 || x.nSplit > n + 1)
    return Err() << "n_split " << x.nSplit << " out of range [1, " << n + 1 << "]";
  std::vector<int64_t> lengths(src->lengths.begin(), src->lengths.begin() + (x.nSplit - 1));
  int64_t last = 1;
  for (int j = x.nSplit - 1; j < n; ++j)
    last = (last > 0 && src->lengths[j] > 0) ? last * src->lengths[j] : 0;
  lengths.push_back(last);
  return applySplitLengths(s, x.stage, x.iter, lengths, true);
}

std::string apply(State& s, const FollowFusedSplitStep& x) {
  if (x.srcSteps.empty()) return "no source steps";
  int64_t length = 1;
  for (int id : x.srcSteps) {
    std::string err;
    const SplitStep* src = splitAt(s, id, &err);
    if (!src) return err;
    if (x.level < 0 || x.level >= static_cast<int>(src->lengths.size()))
      return Err() << "level " << x.level << " out of range for step " << id;
    int64_t l = src->lengths[x.level];
    length = (length > 0 && l > 0) ? length * l : 0;
  }
  return applySplitLengths(s, x.stage, x.iter, {length}, x.factorOrNparts);
}

std::string apply(State& s, const FuseStep& x) {
  std::string e = checkStage(s, x.stage);
  if (!e.empty()) return e;
  if (x.iters.empty()) return "fuse needs at least one loop";
  for (int it : x.iters) {
    e = checkLoop(s, x.stage, it);
    if (!e.empty()) return e;
  }
  for (size_t k = 1; k < x.iters.size(); ++k)
    if (x.iters[k] != x.iters[k - 1] + 1) return "fused loops must be consecutive and in order";
  const auto& cst = s.stage(x.stage);
  std::vector<int> parents;
  for (int it : x.iters) parents.push_back(cst.leaves[it]);
  IterKind kind = cst.iters[parents[0]].kind;
  for (int p : parents) {
    if (cst.iters[p].kind != kind) return "cannot fuse a spatial loop with a reduction loop";
    if (cst.iters[p].annotation != Annotation::None)
      return Err() << "cannot fuse annotated loop " << cst.iters[p].name;
  }
  if (parents.size() == 1) return "";
  StageNode& st = s.mutableStage(x.stage);
  Iterator fused;
  fused.kind = kind;
  for (size_t k = 0; k < parents.size(); ++k)
    fused.name += (k ? "@" : "") + st.iters[parents[k]].name;
  IterRelation rel;
  rel.kind = IterRelation::Kind::Fuse;
  rel.parents = parents;
  rel.children = {static_cast<int>(st.iters.size())};
  st.iters.push_back(fused);
  st.relations.push_back(rel);
  st.leaves.erase(st.leaves.begin() + x.iters.front(), st.leaves.begin() + x.iters.back() + 1);
  st.leaves.insert(st.leaves.begin() + x.iters.front(), rel.children[0]);
  std::vector<int64_t> root;
  for (int i = 0; i < st.numRoot; ++i) root.push_back(st.iters[i].extent);
  recomputeExtents(st, root);
  moveAttachments(s, x.stage, parents, rel.children[0]);
  return "";
}

std::string apply(State& s, const ReorderStep& x) {
  std::string e = checkStage(s, x.stage);
  if (!e.empty()) return e;
  const auto& cst = s.stage(x.stage);
  if (cst.isPlaceholder()) return "cannot reorder a placeholder";
  if (static_cast<int>(x.order.size()) != cst.numLeaves())
    return Err() << "reorder lists " << x.order.size() << " loops, stage " << cst.op->name
                 << " has " << cst.numLeaves();
  std::vector<bool> seen(x.order.size(), false);
  for (int p : x.order) {
    if (p < 0 || p >= cst.numLeaves()) return Err() << "reorder: loop " << p << " out of range";
    if (seen[p]) return Err() << "reorder: loop " << p << " listed twice";
    seen[p] = true;
  }
  std::vector<int> leaves;
  for (int p : x.order) leaves.push_back(cst.leaves[p]);
  s.mutableStage(x.stage).leaves = leaves;
  return "";
}

std::string apply(State& s, const AnnotationStep& x) {
  std::string e = checkLoop(s, x.stage, x.iter);
  if (!e.empty()) return e;
  const auto& cst = s.stage(x.stage);
  const Iterator& it = cst.leaf(x.iter);
  if (x.annotation == Annotation::None) {
    s.mutableStage(x.stage).iters[cst.leaves[x.iter]].annotation = Annotation::None;
    return "";
  }
  if (it.annotation != Annotation::None)
    return Err() << "loop " << it.name << " is already annotated " << annotationName(it.annotation);
  bool reduce = it.kind == IterKind::Reduce;
  if (reduce && (x.annotation == Annotation::Parallel || x.annotation == Annotation::Vectorize ||
                 x.annotation == Annotation::VThread || x.annotation == Annotation::BlockX ||
                 x.annotation == Annotation::BlockY || x.annotation == Annotation::BlockZ))
    return Err() << "cannot annotate reduction loop " << it.name << " "
                 << annotationName(x.annotation);
  if (x.annotation == Annotation::Vectorize && it.extent <= 0)
    return Err() << "cannot vectorize loop " << it.name << " of unknown extent";
  s.mutableStage(x.stage).iters[cst.leaves[x.iter]].annotation = x.annotation;
  // A thread binding changes the regions of the shared and global stages computed inside it
  // (they span the block's threads): their extents follow before a later step reads them.
  if (isThreadBinding(x.annotation)) inferBound(s);
  return "";
}

std::string apply(State& s, const PragmaStep& x) {
  std::string e = checkLoop(s, x.stage, x.iter);
  if (!e.empty()) return e;
  if (x.key_ != "auto_unroll_max_step") return Err() << "unknown pragma '" << x.key_ << "'";
  if (x.value < 0) return "auto_unroll_max_step must be >= 0";
  const auto& cst = s.stage(x.stage);
  s.mutableStage(x.stage).iters[cst.leaves[x.iter]].autoUnrollMaxStep = x.value;
  return "";
}

std::string apply(State& s, const StorageAlignStep& x) {
  std::string e = checkStage(s, x.stage);
  if (!e.empty()) return e;
  const auto& cst = s.stage(x.stage);
  if (cst.isPlaceholder()) return "cannot align a placeholder's storage";
  if (x.iter < 0 || x.iter >= cst.numSpatialRoot)
    return Err() << "axis " << x.iter << " out of range for " << cst.op->name << " (rank "
                 << cst.numSpatialRoot << ")";
  if (x.factor < 1) return "storage_align factor must be >= 1";
  if (x.factor > kMaxStorageAlign)
    return Err() << "storage_align factor " << x.factor << " is larger than " << kMaxStorageAlign;
  if (x.offset < 0 || x.offset >= x.factor) return "storage_align offset must be in [0, factor)";
  StageNode& st = s.mutableStage(x.stage);
  st.aligns.erase(std::remove_if(st.aligns.begin(), st.aligns.end(),
                                 [&](const StageAlign& a) { return a.axis == x.iter; }),
                  st.aligns.end());
  st.aligns.push_back({x.iter, x.factor, x.offset});
  return "";
}

// ---- compute locations ----

std::string checkComputeStage(const State& s, int stage, const char* what) {
  std::string e = checkStage(s, stage);
  if (!e.empty()) return e;
  const auto& st = s.stage(stage);
  if (st.isPlaceholder())
    return Err() << what << ": stage " << stage << " (" << st.op->name << ") is a placeholder";
  return "";
}

std::string apply(State& s, const ComputeAtStep& x) {
  std::string e = checkComputeStage(s, x.stage, "compute_at");
  if (!e.empty()) return e;
  e = checkLoop(s, x.targetStage, x.targetIter);
  if (!e.empty()) return e;
  const auto& P = s.stage(x.stage);
  const auto& C = s.stage(x.targetStage);
  if (x.stage == x.targetStage) return "cannot compute a stage at itself";
  if (C.loc == ComputeLoc::Inlined) return Err() << "target stage " << C.op->name << " is inlined";
  auto cons = s.effectiveConsumers(x.stage);
  if (cons.empty()) return Err() << "stage " << P.op->name << " is an output and has no consumer";
  if (cons != std::vector<int>{x.targetStage})
    return Err() << "compute_at target " << C.op->name << " is not the only consumer of "
                 << P.op->name << " (" << cons.size() << " consumers)";
  for (int a = x.targetStage; a >= 0 && s.stage(a).loc == ComputeLoc::At;
       a = s.stage(a).attachStage)
    if (s.stage(a).attachStage == x.stage) return "compute_at would create an attachment cycle";
  StageNode& st = s.mutableStage(x.stage);
  st.loc = ComputeLoc::At;
  st.attachStage = x.targetStage;
  st.attachIter = C.leaves[x.targetIter];
  inferBound(s);
  return "";
}

std::string apply(State& s, const ComputeInlineStep& x) {
  std::string e = checkComputeStage(s, x.stage, "compute_inline");
  if (!e.empty()) return e;
  const auto& P = s.stage(x.stage);
  if (P.op->hasReduction())
    return Err() << "cannot inline " << P.op->name << ": it has a reduction";
  if (s.consumers(x.stage).empty()) return Err() << "cannot inline output " << P.op->name;
  if (hasAttached(s, x.stage))
    return Err() << "cannot inline " << P.op->name << ": stages are computed at it";
  StageNode& st = s.mutableStage(x.stage);
  st.loc = ComputeLoc::Inlined;
  st.attachStage = st.attachIter = -1;
  inferBound(s);
  return "";
}

std::string apply(State& s, const ComputeRootStep& x) {
  std::string e = checkComputeStage(s, x.stage, "compute_root");
  if (!e.empty()) return e;
  StageNode& st = s.mutableStage(x.stage);
  st.loc = ComputeLoc::Root;
  st.attachStage = st.attachIter = -1;
  inferBound(s);
  return "";
}

// ---- DAG rewrites ----

std::string apply(State& s, const CacheReadStep& x) {
  std::string e = checkStage(s, x.stage);
  if (!e.empty()) return e;
  const auto& P = s.stage(x.stage);
  if (P.loc == ComputeLoc::Inlined) return Err() << "cannot cache an inlined stage";
  if (P.loc == ComputeLoc::At)
    return Err() << "cache_read of " << P.op->name
                 << ", which is computed at another stage (its consumers would change)";
  if (x.readers.empty()) return "cache_read needs at least one reader";
  auto cons = s.consumers(x.stage);
  for (size_t k = 0; k < x.readers.size(); ++k) {
    int r = x.readers[k];
    if (std::find(cons.begin(), cons.end(), r) == cons.end())
      return Err() << "stage " << r << " does not read " << P.op->name;
    if (std::count(x.readers.begin(), x.readers.end(), r) > 1)
      return Err() << "reader " << r << " listed twice";
  }
  Tensor src = P.op;
  std::string name = src->name + "." + memScopeName(x.scope);
  std::vector<std::string> names;
  if (src->isCompute())
    for (auto& a : src->axes) names.push_back(a.var.name());
  else
    for (size_t d = 0; d < src->shape.size(); ++d) names.push_back("ax" + std::to_string(d));
  Tensor cache = compute(
      name, "cache_read", src->shape,
      [&](const std::vector<Var>& ax) {
        return read(src, std::vector<Expr>(ax.begin(), ax.end()));
      },
      names);
  // Point the readers (only) at the cache, then rebuild what reads them.
  std::unordered_map<const OperationNode*, Tensor> repl;
  for (int r : x.readers) {
    const auto& op = s.stage(r).op;
    class Swap : public ExprMutator {
    public:
      Swap(const OperationNode* from, Tensor to) : from_(from), to_(std::move(to)) {}
      Expr mutateTensorRead(const TensorReadNode* op, const Expr& self) override {
        Expr e = ExprMutator::mutateTensorRead(op, self);
        auto* rd = e.as<TensorReadNode>();
        return rd->tensor.get() == from_ ? read(to_, rd->indices) : e;
      }

    private:
      const OperationNode* from_;
      Tensor to_;
    };
    Tensor fresh = withBody(*op, Swap(src.get(), cache).mutate(op->body), op->name);
    repl[op.get()] = fresh;
    s.mutableStage(r).op = fresh;
  }
  rebuildConsumers(s, repl);
  StageNode cs = makeStage(cache);
  cs.scope = x.scope;
  cs.origin = StageOrigin::CacheRead;
  s.insertStage(x.stage + 1, cs);
  inferBound(s);
  return "";
}

std::string apply(State& s, const CacheWriteStep& x) {
  std::string e = checkComputeStage(s, x.stage, "cache_write");
  if (!e.empty()) return e;
  const auto& P = s.stage(x.stage);
  if (P.loc == ComputeLoc::Inlined) return Err() << "cannot cache an inlined stage";
  if (P.transformed())
    return Err() << "cache_write of " << P.op->name << " must come before its loop transforms";
  if (hasAttached(s, x.stage))
    return Err() << "cache_write of " << P.op->name << ": stages are computed at it";
  Tensor old = P.op;
  Tensor local = withBody(*old, old->body, old->name + "." + memScopeName(x.scope));
  std::vector<std::string> names;
  for (auto& a : old->axes) names.push_back(a.var.name());
  Tensor copy = compute(
      old->name, old->tag, old->shape,
      [&](const std::vector<Var>& ax) {
        return read(local, std::vector<Expr>(ax.begin(), ax.end()));
      },
      names);
  StageNode ls = makeStage(local);
  ls.scope = x.scope;
  ls.origin = StageOrigin::CacheWrite;
  StageNode cs = makeStage(copy);
  cs.loc = P.loc;
  cs.attachStage = P.attachStage;
  cs.attachIter = P.attachIter;
  cs.scope = P.scope;
  cs.aligns = P.aligns;
  s.mutableStage(x.stage) = cs;
  rebuildConsumers(s, {{old.get(), copy}});
  s.insertStage(x.stage, ls);
  inferBound(s);
  return "";
}

std::string apply(State& s, const RfactorStep& x) {
  std::string e = checkLoop(s, x.stage, x.iter);
  if (!e.empty()) return e;
  const auto& P = s.stage(x.stage);
  const auto& op = *P.op;
  if (!op.hasReduction()) return Err() << "rfactor of " << op.name << ": it has no reduction";
  if (P.loc == ComputeLoc::Inlined) return "cannot rfactor an inlined stage";
  if (P.leaf(x.iter).kind != IterKind::Reduce)
    return Err() << "rfactor: loop " << P.leaf(x.iter).name << " is not a reduction loop";
  if (P.spatialTransformed())
    return Err() << "rfactor of " << op.name << " must come before transforms of its spatial loops";
  if (hasAttached(s, x.stage))
    return Err() << "rfactor of " << op.name << ": stages are computed at it";
  int nsp = static_cast<int>(op.axes.size());
  if (x.factorIter < 0 || x.factorIter > nsp)
    return Err() << "rfactor: factor axis " << x.factorIter << " out of range [0, " << nsp << "]";
  for (int id : P.leaves)
    if (P.iters[id].kind == IterKind::Reduce && P.iters[id].extent <= 0)
      return "rfactor needs known extents";
  for (int id : P.leaves)
    if (P.iters[id].kind == IterKind::Reduce && P.iters[id].annotation != Annotation::None)
      return "rfactor of an annotated reduction loop";
  int factorId = P.leaves[x.iter];
  // Shape of the rf op: spatial axes with the factor axis inserted.
  Shape shape = op.shape;
  shape.insert(shape.begin() + x.factorIter, P.iters[factorId].extent);
  std::vector<int> otherReduce;
  for (int id : P.leaves)
    if (P.iters[id].kind == IterKind::Reduce && id != factorId) otherReduce.push_back(id);
  Shape redExt;
  for (int id : otherReduce) redExt.push_back(P.iters[id].extent);
  auto bodyFor = [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
    std::vector<Var> leafVars(P.iters.size());
    for (size_t i = 0; i < P.iters.size(); ++i) leafVars[i] = Var(P.iters[i].name);
    leafVars[factorId] = ax[x.factorIter];
    for (size_t k = 0; k < otherReduce.size(); ++k) leafVars[otherReduce[k]] = r[k];
    RootValues rv = rootValues(P, leafVars);
    std::unordered_map<const VarNode*, Expr> map;
    int k = 0;
    for (int d = 0; d <= nsp; ++d) {
      if (d == x.factorIter) continue;
      map[op.axes[k].var.node()] = ax[d];
      ++k;
    }
    for (size_t j = 0; j < op.reduceAxes.size(); ++j)
      map[op.reduceAxes[j].var.node()] = rv.values[nsp + j];
    Expr body = substitute(op.body, map);
    Expr guard;
    for (auto& g : rv.guards) guard = guard.defined() ? (guard && g.cond) : g.cond;
    if (guard.defined()) body = select(guard, body, reduceIdentity(op.reduce, op.dtype));
    return body;
  };
  Tensor rf = otherReduce.empty()
                  ? compute(op.name + ".rf", op.tag + "_rf", shape,
                            [&](const std::vector<Var>& ax) { return bodyFor(ax, {}); })
                  : reduce(op.name + ".rf", op.tag + "_rf", shape, op.reduce, redExt, bodyFor);
  Tensor fin = reduce(op.name, op.tag, op.shape, op.reduce, {P.iters[factorId].extent},
                      [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
                        std::vector<Expr> idx(ax.begin(), ax.end());
                        idx.insert(idx.begin() + x.factorIter, r[0]);
                        return read(rf, idx);
                      });
  StageNode fs = makeStage(fin);
  fs.loc = P.loc;
  fs.attachStage = P.attachStage;
  fs.attachIter = P.attachIter;
  fs.scope = P.scope;
  Tensor old = P.op;
  s.mutableStage(x.stage) = fs;
  rebuildConsumers(s, {{old.get(), fin}});
  StageNode rs = makeStage(rf);
  rs.origin = StageOrigin::Rfactor;
  s.insertStage(x.stage, rs);
  inferBound(s);
  return "";
}

std::string applyAny(State& s, const Step& step) {
  return std::visit(
      [&](const auto& x) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>)
          return "empty step";
        else
          return apply(s, x);
      },
      step);
}

// ---- printing ----

std::string listOf(const std::vector<int>& v) {
  std::vector<std::string> p;
  for (int x : v) p.push_back(std::to_string(x));
  return "[" + join(p, ", ") + "]";
}
std::string listOf64(const std::vector<int64_t>& v) {
  std::vector<std::string> p;
  for (int64_t x : v) p.push_back(x > 0 ? std::to_string(x) : "?");
  return "[" + join(p, ", ") + "]";
}

} // namespace

// Invariants every state keeps: an attached stage's only consumer is the stage it is computed
// at; that stage is not inlined. A step that would break them is rejected as a whole (e.g.
// moving an inlined consumer out of line changes who consumes its producers).
std::string checkAttachments(const State& s) {
  for (int i = 0; i < s.numStages(); ++i) {
    const auto& st = s.stage(i);
    if (st.loc != ComputeLoc::At) continue;
    const auto& target = s.stage(st.attachStage);
    if (target.loc == ComputeLoc::Inlined)
      return Err() << "stage " << st.op->name << " would be computed at inlined stage "
                   << target.op->name;
    if (s.effectiveConsumers(i) != std::vector<int>{st.attachStage})
      return Err() << "stage " << st.op->name << " would stay computed at " << target.op->name
                   << ", which would no longer be its only consumer";
  }
  return "";
}

std::string applyStep(State& state, const Step& s) {
  State next = state;
  std::string err = applyAny(next, s);
  if (err.empty()) err = checkAttachments(next);
  if (!err.empty()) return err;
  next.pushStep(s);
  state = std::move(next);
  return "";
}

ReplayResult replay(const ComputeDAG& dag, const std::vector<Step>& steps) {
  ReplayResult r{State(dag), "", -1};
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string err = applyStep(r.state, steps[i]);
    if (!err.empty()) {
      r.error = err;
      r.failedStep = static_cast<int>(i);
      return r;
    }
  }
  return r;
}

std::string toString(const Step& step) {
  std::ostringstream os;
  os << stepTag(step) << "(";
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, AnnotationStep>)
          os << "stage " << x.stage << ", loop " << x.iter << ", " << annotationName(x.annotation);
        else if constexpr (std::is_same_v<T, FuseStep>)
          os << "stage " << x.stage << ", loops " << listOf(x.iters);
        else if constexpr (std::is_same_v<T, PragmaStep>)
          os << "stage " << x.stage << ", loop " << x.iter << ", " << x.key_ << "=" << x.value;
        else if constexpr (std::is_same_v<T, ReorderStep>)
          os << "stage " << x.stage << ", order " << listOf(x.order);
        else if constexpr (std::is_same_v<T, SplitStep>)
          os << "stage " << x.stage << ", loop " << x.iter << ", extent " << x.extent << ", "
             << listOf64(x.lengths) << (x.innerToOuter ? ", inner_to_outer" : ", outer_to_inner");
        else if constexpr (std::is_same_v<T, FollowSplitStep>)
          os << "stage " << x.stage << ", loop " << x.iter << ", like step " << x.srcStep
             << ", n_split " << x.nSplit;
        else if constexpr (std::is_same_v<T, FollowFusedSplitStep>)
          os << "stage " << x.stage << ", loop " << x.iter << ", like steps " << listOf(x.srcSteps)
             << ", level " << x.level << (x.factorOrNparts ? ", factor" : ", nparts");
        else if constexpr (std::is_same_v<T, StorageAlignStep>)
          os << "stage " << x.stage << ", axis " << x.iter << ", factor " << x.factor << ", offset "
             << x.offset;
        else if constexpr (std::is_same_v<T, ComputeAtStep>)
          os << "stage " << x.stage << " at stage " << x.targetStage << ", loop " << x.targetIter;
        else if constexpr (std::is_same_v<T, ComputeInlineStep> ||
                           std::is_same_v<T, ComputeRootStep>)
          os << "stage " << x.stage;
        else if constexpr (std::is_same_v<T, CacheReadStep>)
          os << "stage " << x.stage << ", " << memScopeName(x.scope) << ", readers "
             << listOf(x.readers);
        else if constexpr (std::is_same_v<T, CacheWriteStep>)
          os << "stage " << x.stage << ", " << memScopeName(x.scope);
        else if constexpr (std::is_same_v<T, RfactorStep>)
          os << "stage " << x.stage << ", loop " << x.iter << ", factor axis " << x.factorIter;
      },
      step);
  os << ")";
  return os.str();
}

// ---- JSON ----

namespace {

using nlohmann::json;

json lengthsJson(const std::vector<int64_t>& v) {
  json a = json::array();
  for (int64_t x : v) a.push_back(x > 0 ? json(x) : json(nullptr));
  return a;
}

json stepJson(const Step& step) {
  json j = json::array({stepTag(step)});
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, AnnotationStep>)
          j.insert(j.end(), {x.stage, x.iter, annotationName(x.annotation)});
        else if constexpr (std::is_same_v<T, FuseStep>)
          j.insert(j.end(), {json(x.stage), json(x.iters)});
        else if constexpr (std::is_same_v<T, PragmaStep>)
          j.insert(j.end(), {json(x.stage), json(x.iter), json(x.key_), json(x.value)});
        else if constexpr (std::is_same_v<T, ReorderStep>)
          j.insert(j.end(), {json(x.stage), json(x.order)});
        else if constexpr (std::is_same_v<T, SplitStep>)
          j.insert(j.end(), {json(x.stage), json(x.iter), json(x.extent), lengthsJson(x.lengths),
                             json(x.innerToOuter ? 1 : 0)});
        else if constexpr (std::is_same_v<T, FollowSplitStep>)
          j.insert(j.end(), {x.stage, x.iter, x.srcStep, x.nSplit});
        else if constexpr (std::is_same_v<T, FollowFusedSplitStep>)
          j.insert(j.end(), {json(x.stage), json(x.iter), json(x.srcSteps), json(x.level),
                             json(x.factorOrNparts ? 1 : 0)});
        else if constexpr (std::is_same_v<T, StorageAlignStep>)
          j.insert(j.end(), {json(x.stage), json(x.iter), json(x.factor), json(x.offset)});
        else if constexpr (std::is_same_v<T, ComputeAtStep>)
          j.insert(j.end(), {x.stage, x.targetStage, x.targetIter});
        else if constexpr (std::is_same_v<T, ComputeInlineStep> ||
                           std::is_same_v<T, ComputeRootStep>)
          j.push_back(x.stage);
        else if constexpr (std::is_same_v<T, CacheReadStep>)
          j.insert(j.end(), {json(x.stage), json(memScopeName(x.scope)), json(x.readers)});
        else if constexpr (std::is_same_v<T, CacheWriteStep>)
          j.insert(j.end(), {json(x.stage), json(memScopeName(x.scope))});
        else if constexpr (std::is_same_v<T, RfactorStep>)
          j.insert(j.end(), {x.stage, x.iter, x.factorIter});
      },
      step);
  return j;
}

// Reads field k of a step array with a clear error.
struct Fields {
  const json& a;
  std::string tag;
  const json& at(size_t k, const char* what) const {
    if (k >= a.size())
      throw UserError(tag + ": missing field " + std::to_string(k) + " (" + what + ")");
    return a[k];
  }
  int i(size_t k, const char* what) const {
    int64_t v = i64(k, what);
    if (v < INT32_MIN || v > INT32_MAX)
      throw UserError(tag + ": field " + std::to_string(k) + " (" + what + ") " +
                      std::to_string(v) + " is out of range");
    return static_cast<int>(v);
  }
  int64_t i64(size_t k, const char* what) const {
    const json& v = at(k, what);
    if (!v.is_number_integer())
      throw UserError(tag + ": field " + std::to_string(k) + " (" + what + ") is not an integer");
    return v.get<int64_t>();
  }
  std::string str(size_t k, const char* what) const {
    const json& v = at(k, what);
    if (!v.is_string())
      throw UserError(tag + ": field " + std::to_string(k) + " (" + what + ") is not a string");
    return v.get<std::string>();
  }
  std::vector<int> ints(size_t k, const char* what) const {
    const json& v = at(k, what);
    if (!v.is_array())
      throw UserError(tag + ": field " + std::to_string(k) + " (" + what + ") is not a list");
    std::vector<int> out;
    for (auto& e : v) {
      if (!e.is_number_integer()) throw UserError(tag + ": " + what + " holds a non-integer");
      int64_t x = e.get<int64_t>();
      if (x < INT32_MIN || x > INT32_MAX)
        throw UserError(tag + ": " + what + " holds " + std::to_string(x) + ", out of range");
      out.push_back(static_cast<int>(x));
    }
    return out;
  }
  std::vector<int64_t> lengths(size_t k) const {
    const json& v = at(k, "lengths");
    if (!v.is_array()) throw UserError(tag + ": lengths are not a list");
    std::vector<int64_t> out;
    for (auto& e : v) {
      if (e.is_null())
        out.push_back(0);
      else if (e.is_number_integer() && e.get<int64_t>() > 0)
        out.push_back(e.get<int64_t>());
      else
        throw UserError(tag + ": a length is neither a positive integer nor null");
    }
    return out;
  }
  MemScope scope(size_t k) const {
    MemScope m;
    std::string s = str(k, "scope");
    if (!parseMemScope(s, &m)) throw UserError(tag + ": unknown scope '" + s + "'");
    return m;
  }
  void exactly(size_t n) const {
    if (a.size() != n)
      throw UserError(tag + ": " + std::to_string(a.size() - 1) + " fields, expected " +
                      std::to_string(n - 1));
  }
};

Step stepFromJson(const json& a) {
  if (!a.is_array() || a.empty() || !a[0].is_string())
    throw UserError("a step must be an array starting with its tag");
  std::string tag = a[0].get<std::string>();
  Fields f{a, tag};
  if (tag == "AN") {
    f.exactly(4);
    Annotation an;
    std::string name = f.str(3, "annotation");
    if (!parseAnnotation(name, &an)) throw UserError("AN: unknown annotation '" + name + "'");
    return AnnotationStep{f.i(1, "stage"), f.i(2, "loop"), an};
  }
  if (tag == "FU") {
    f.exactly(3);
    return FuseStep{f.i(1, "stage"), f.ints(2, "loops")};
  }
  if (tag == "PR") {
    f.exactly(5);
    return PragmaStep{f.i(1, "stage"), f.i(2, "loop"), f.str(3, "key"), f.i64(4, "value")};
  }
  if (tag == "RE") {
    f.exactly(3);
    return ReorderStep{f.i(1, "stage"), f.ints(2, "order")};
  }
  if (tag == "SP") {
    f.exactly(6);
    return SplitStep{f.i(1, "stage"), f.i(2, "loop"), f.i64(3, "extent"), f.lengths(4),
                     f.i(5, "inner_to_outer") != 0};
  }
  if (tag == "FSP") {
    f.exactly(5);
    return FollowSplitStep{f.i(1, "stage"), f.i(2, "loop"), f.i(3, "source step"),
                           f.i(4, "n_split")};
  }
  if (tag == "FFSP") {
    f.exactly(6);
    return FollowFusedSplitStep{f.i(1, "stage"), f.i(2, "loop"), f.ints(3, "source steps"),
                                f.i(4, "level"), f.i(5, "factor_or_nparts") != 0};
  }
  if (tag == "SA") {
    f.exactly(5);
    return StorageAlignStep{f.i(1, "stage"), f.i(2, "axis"), f.i64(3, "factor"),
                            f.i64(4, "offset")};
  }
  if (tag == "CA") {
    f.exactly(4);
    return ComputeAtStep{f.i(1, "stage"), f.i(2, "target stage"), f.i(3, "target loop")};
  }
  if (tag == "CI") {
    f.exactly(2);
    return ComputeInlineStep{f.i(1, "stage")};
  }
  if (tag == "CR") {
    f.exactly(2);
    return ComputeRootStep{f.i(1, "stage")};
  }
  if (tag == "CHR") {
    f.exactly(4);
    return CacheReadStep{f.i(1, "stage"), f.scope(2), f.ints(3, "readers")};
  }
  if (tag == "CHW") {
    f.exactly(3);
    return CacheWriteStep{f.i(1, "stage"), f.scope(2)};
  }
  if (tag == "RF") {
    f.exactly(4);
    return RfactorStep{f.i(1, "stage"), f.i(2, "loop"), f.i(3, "factor axis")};
  }
  throw UserError("unknown step tag '" + tag + "'");
}

} // namespace

std::string stepsToJson(const std::vector<Step>& steps) {
  json a = json::array();
  for (auto& s : steps) a.push_back(stepJson(s));
  return a.dump();
}

bool stepsFromJson(const std::string& text, std::vector<Step>* steps, std::string* error) {
  json a;
  if (jsonDepth(text) > kMaxJsonDepth) {
    *error = "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep";
    return false;
  }
  try {
    a = json::parse(text);
  } catch (const json::exception& e) { // syntax, and numbers beyond 64 bits
    *error = std::string("invalid JSON: ") + e.what();
    return false;
  }
  if (!a.is_array()) {
    *error = "a schedule is a JSON array of steps";
    return false;
  }
  steps->clear();
  for (size_t i = 0; i < a.size(); ++i) {
    try {
      steps->push_back(stepFromJson(a[i]));
    } catch (const UserError& e) {
      *error = "step " + std::to_string(i) + ": " + e.what();
      return false;
    }
  }
  return true;
}

} // namespace wm::sched
