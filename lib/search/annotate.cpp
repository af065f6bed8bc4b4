// Random annotation of sketches (see annotate.h).
#include <wm/ir/visitor.h>
#include <wm/schedule/bound.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/support/error.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <tuple>

namespace wm::search {

using namespace wm::sched;

namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

} // namespace

bool parallelize(State& s, int i, const target::Target& hw) {
  const auto& st = s.stage(i);
  int64_t degree = 1;
  int count = 0;
  for (int p = 0; p < st.numLeaves(); ++p) {
    const auto& it = st.leaf(p);
    if (it.kind != IterKind::Spatial || it.annotation != Annotation::None || it.extent <= 0) break;
    if (degree > 16 * int64_t(hw.cores)) break;
    degree *= it.extent;
    ++count;
    bool attachPoint = false;
    for (int j = 0; j < s.numStages(); ++j)
      if (s.stage(j).loc == ComputeLoc::At && s.stage(j).attachStage == i &&
          s.stage(j).attachIter == st.leaves[p])
        attachPoint = true;
    if (attachPoint) break;
  }
  if (count == 0 || degree <= 1) return true;
  std::vector<int> iters;
  for (int p = 0; p < count; ++p) iters.push_back(p);
  if (count > 1 && !applyStep(s, FuseStep{i, iters}).empty()) return false;
  return applyStep(s, AnnotationStep{i, 0, Annotation::Parallel}).empty();
}

bool vectorize(State& s, int i, int64_t maxLanes) {
  const auto& st = s.stage(i);
  int n = st.numLeaves();
  int64_t lanes = 1;
  int count = 0;
  for (int p = n - 1; p >= 0; --p) {
    const auto& it = st.leaf(p);
    if (it.kind != IterKind::Spatial || it.annotation != Annotation::None || it.extent <= 0) break;
    if (lanes * it.extent > maxLanes) break;
    bool attachPoint = false;
    for (int j = 0; j < s.numStages(); ++j)
      if (s.stage(j).loc == ComputeLoc::At && s.stage(j).attachStage == i &&
          s.stage(j).attachIter == st.leaves[p])
        attachPoint = true;
    if (attachPoint) break;
    lanes *= it.extent;
    ++count;
  }
  if (count == 0 || lanes <= 1) return true;
  std::vector<int> iters;
  for (int p = n - count; p < n; ++p) iters.push_back(p);
  if (count > 1 && !applyStep(s, FuseStep{i, iters}).empty()) return false;
  return applyStep(s, AnnotationStep{i, n - count, Annotation::Vectorize}).empty();
}

// The layout stage inlined into root stage i that it reads transposed: a channels-last
// conv's [N, H, W, K] result read back as NCHW by the fused epilogue, which reads along the
// axis the layout keeps innermost (K) while it writes along its own innermost axis (W).
int transposedReadAxis(const State& s, int i) {
  const StageNode& st = s.stage(i);
  const ir::OperationNode& op = *st.op;
  int n = static_cast<int>(op.axes.size());
  if (op.hasReduction() || n < 2 || st.numLeaves() != n || !st.relations.empty()) return -1;
  for (int j = 0; j < s.numStages(); ++j) {
    const StageNode& l = s.stage(j);
    if (l.loc != ComputeLoc::Inlined || l.op->tag != ir::kLayoutTag || l.op->shape != op.shape ||
        s.effectiveConsumers(j) != std::vector<int>{i})
      continue;
    auto* r = l.op->body.as<ir::TensorReadNode>();
    if (!r || r->indices.empty()) continue;
    for (int a = 0; a < n - 1; ++a)
      if (r->indices.back().as<ir::VarNode>() == l.op->axes[a].var.node()) return a;
  }
  return -1;
}

// Both axes split into blocks, ordered [..., K outer, ..., W outer, K inner, W inner]: each
// block reuses the cache lines it reads, where the untiled loop fetches every line of a
// result larger than L2 once per output column (up to 16 times).
bool tileTransposedRead(State& s, int i, int r, int64_t readBlock, int64_t rowBlock) {
  if (r < 0 || readBlock <= 1 || rowBlock <= 1) return true;
  const ir::OperationNode& op = *s.stage(i).op;
  int n = static_cast<int>(op.axes.size());
  // Leaves after the two splits: 0..r-1, r (K outer), r+1 (K inner), r+2..n-1, n (W outer),
  // n+1 (W inner).
  if (!applyStep(s, SplitStep{i, r, op.axes[r].extent, {readBlock}, true}).empty() ||
      !applyStep(s, SplitStep{i, n, op.axes[n - 1].extent, {rowBlock}, true}).empty())
    return false;
  std::vector<int> order;
  for (int p = 0; p <= r; ++p) order.push_back(p);
  for (int p = r + 2; p <= n; ++p) order.push_back(p);
  order.push_back(r + 1);
  order.push_back(n + 1);
  return applyStep(s, ReorderStep{i, order}).empty();
}

namespace {

// GPU thread binding of a multi-level tiled stage (SSSRRSRS): level 0 -> blockIdx.x,
// level 1 -> vthread, level 2 -> threadIdx.x. Other root stages: all spatial loops fused and
// split over threads.
bool bindThreads(State& s, int i, const target::Target& hw, Rng& rng) {
  const auto& st = s.stage(i);
  int nsp = 0;
  for (int p = 0; p < st.numLeaves(); ++p) nsp += st.leaf(p).kind == IterKind::Spatial;
  bool tiled = !st.relations.empty() && st.numSpatialRoot > 0 && nsp >= 3 * st.numSpatialRoot;
  if (tiled) {
    int k = st.numSpatialRoot;
    for (int level = 0; level < 3; ++level) {
      std::vector<int> iters;
      for (int d = 0; d < k; ++d) iters.push_back(level + d);
      if (k > 1 && !applyStep(s, FuseStep{i, iters}).empty()) return false;
    }
    int64_t vthreads = s.stage(i).leaf(1).extent, threads = s.stage(i).leaf(2).extent;
    if (vthreads > hw.gpu.maxVthread) return false;
    int64_t space = 1;
    for (auto& a : s.stage(i).op->axes) space *= a.extent;
    if (threads < hw.gpu.warpSize && space > 2 * hw.gpu.warpSize) return false;
    if (threads > hw.gpu.maxThreadsPerBlock) return false;
    return applyStep(s, AnnotationStep{i, 0, Annotation::BlockX}).empty() &&
           applyStep(s, AnnotationStep{i, 1, Annotation::VThread}).empty() &&
           applyStep(s, AnnotationStep{i, 2, Annotation::ThreadX}).empty();
  }
  std::vector<int> sp;
  for (int p = 0; p < st.numLeaves(); ++p)
    if (st.leaf(p).kind == IterKind::Spatial && p == static_cast<int>(sp.size())) sp.push_back(p);
  if (sp.empty()) return true;
  if (sp.size() > 1 && !applyStep(s, FuseStep{i, sp}).empty()) return false;
  // A cross-thread reduction's threads are its reduction's: the spatial loops are the blocks.
  bool crossThread = false;
  for (int p = 1; p < s.stage(i).numLeaves(); ++p)
    crossThread |= s.stage(i).leaf(p).annotation == Annotation::ThreadX;
  if (crossThread) return applyStep(s, AnnotationStep{i, 0, Annotation::BlockX}).empty();
  int64_t extent = s.stage(i).leaf(0).extent;
  static const std::vector<int64_t> choices{32, 64, 128, 256, 512};
  // (never more threads than iterations: a split longer than its loop is refused)
  int64_t t =
      std::min(extent, choices[rng.uniformInt(0, static_cast<int64_t>(choices.size()) - 1)]);
  if (!applyStep(s, SplitStep{i, 0, extent, {t}, true}).empty()) return false;
  return applyStep(s, AnnotationStep{i, 0, Annotation::BlockX}).empty() &&
         applyStep(s, AnnotationStep{i, 1, Annotation::ThreadX}).empty();
}

// Ansor's cooperative fetching: the threads of the block fill a shared stage together; its
// leading spatial loops are fused, split by the block's thread count (threadIdx.x of the root
// stage it is computed in), and the inner part bound to threadIdx.x.
bool cooperativeFetch(State& s, int i) {
  int root = i;
  while (s.stage(root).loc == ComputeLoc::At) root = s.stage(root).attachStage;
  int64_t threads = 1;
  for (int p = 0; p < s.stage(root).numLeaves(); ++p)
    if (s.stage(root).leaf(p).annotation == Annotation::ThreadX)
      threads = std::max(threads, s.stage(root).leaf(p).extent);
  if (threads <= 1) return true; // one thread: nothing to share out
  const auto& st = s.stage(i);
  std::vector<int> sp;
  for (int p = 0; p < st.numLeaves(); ++p)
    if (st.leaf(p).kind == IterKind::Spatial && p == static_cast<int>(sp.size())) sp.push_back(p);
  if (sp.empty()) return true;
  if (sp.size() > 1 && !applyStep(s, FuseStep{i, sp}).empty()) return false;
  int64_t extent = s.stage(i).leaf(0).extent;
  if (extent <= threads) return applyStep(s, AnnotationStep{i, 0, Annotation::ThreadX}).empty();
  return applyStep(s, SplitStep{i, 0, extent, {threads}, true}).empty() &&
         applyStep(s, AnnotationStep{i, 1, Annotation::ThreadX}).empty();
}

} // namespace

namespace {
// Every ordered factorization of n into `parts` factors, the last at most maxLast (Ansor
// samples FillTileSize uniformly over these; memoized).
const std::vector<std::vector<int64_t>>& factorizations(int64_t n, int parts, int64_t maxLast) {
  static std::map<std::tuple<int64_t, int, int64_t>, std::vector<std::vector<int64_t>>> memo;
  auto key = std::make_tuple(n, parts, maxLast);
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> cur;
  std::function<void(int64_t, int)> rec = [&](int64_t rest, int left) {
    if (out.size() > 200000) return; // enough to sample from
    if (left == 1) {
      if (rest <= maxLast || parts == 1) {
        cur.push_back(rest);
        out.push_back(cur);
        cur.pop_back();
      }
      return;
    }
    for (int64_t d : divisors(rest)) {
      cur.push_back(d);
      rec(rest / d, left - 1);
      cur.pop_back();
    }
  };
  rec(n, parts);
  return memo.emplace(key, std::move(out)).first->second;
}
} // namespace

bool fetchSharedCooperatively(State& s) {
  for (int i = 0; i < s.numStages(); ++i)
    if (s.stage(i).loc == ComputeLoc::At && effectiveScope(s, i) == ir::MemScope::Shared &&
        !cooperativeFetch(s, i))
      return false;
  return true;
}

std::vector<Step> withoutCooperativeFetch(const State& s) {
  std::vector<Step> out;
  for (const auto& st : s.steps()) {
    int stage = -1;
    if (auto* f = std::get_if<FuseStep>(&st)) stage = f->stage;
    if (auto* p = std::get_if<SplitStep>(&st)) stage = p->stage;
    if (auto* a = std::get_if<AnnotationStep>(&st)) stage = a->stage;
    bool fetch = stage >= 0 && stage < s.numStages() && s.stage(stage).loc == ComputeLoc::At &&
                 effectiveScope(s, stage) == ir::MemScope::Shared;
    if (!fetch) out.push_back(st);
  }
  return out;
}

std::vector<int64_t> randomFactorization(int64_t extent, int parts, int64_t maxInnermost,
                                         Rng& rng) {
  WM_CHECK(parts >= 1 && extent >= 1) << "randomFactorization(" << extent << ", " << parts << ")";
  const auto& all = factorizations(extent, parts, maxInnermost);
  WM_CHECK(!all.empty()) << "no factorization of " << extent;
  return all[rng.uniformInt(0, static_cast<int64_t>(all.size()) - 1)];
}

int64_t packedBlock(const ir::OperationNode& op, int axis) {
  if (!op.body.defined() || axis < 0 || axis >= static_cast<int>(op.axes.size())) return 0;
  const ir::VarNode* v = op.axes[axis].var.node();
  int64_t block = 0;
  ir::postOrderVisit(op.body, [&](const ir::Expr& x) {
    auto* r = x.as<ir::TensorReadNode>();
    if (!r || r->indices.empty()) return;
    auto* m = r->indices.back().as<ir::BinaryNode>();
    int64_t b = 0;
    if (m && m->op == ir::BinaryOp::Mod && m->a.as<ir::VarNode>() == v && ir::isConstInt(m->b, &b))
      block = b;
  });
  return block;
}

int64_t splitBlock(const State& s, const SplitStep& sp) {
  const StageNode& stage = s.stage(sp.stage);
  if (sp.iter < 0 || sp.iter >= static_cast<int>(stage.leaves.size())) return 0;
  int id = stage.leaves[sp.iter];
  return id < stage.numSpatialRoot ? packedBlock(*stage.op, id) : 0;
}

bool hasPackedBlock(const ir::ComputeDAG& dag) {
  for (const auto& op : dag.ops())
    for (int d = 0; d < static_cast<int>(op->axes.size()); ++d)
      if (packedBlock(*op, d) > 0) return true;
  return false;
}

std::optional<State> annotate(const SearchTask& task, const Sketch& sketch, Rng& rng) {
  // 1. Fill tile sizes, step by step (a split names its loop by its position at that time); an
  // axis indexing a packed weight's blocks gets the block as its innermost length.
  State s(task.dag);
  for (Step st : sketch.steps) {
    auto* sp = std::get_if<SplitStep>(&st);
    if (sp && std::find(sp->lengths.begin(), sp->lengths.end(), 0) != sp->lengths.end()) {
      if (sp->extent <= 0) return std::nullopt;
      int parts = static_cast<int>(sp->lengths.size()) + 1;
      int64_t block = splitBlock(s, *sp);
      std::vector<int64_t> f;
      if (block > 1 && block <= 64 && sp->extent % block == 0) {
        f = randomFactorization(sp->extent / block, parts - 1, sp->extent, rng);
        f.push_back(block);
      } else {
        f = randomFactorization(sp->extent, parts, 64, rng);
      }
      // innerToOuter: the lengths are the inner parts, the outermost takes the rest.
      for (size_t k = 0; k < sp->lengths.size(); ++k) sp->lengths[k] = f[k + 1];
    }
    if (!applyStep(s, st).empty()) return std::nullopt;
  }

  // 2. Change compute locations of stages that are neither tiled nor need tiling.
  for (int i = s.numStages() - 1; i >= 0; --i) {
    const auto& st = s.stage(i);
    if (st.isPlaceholder() || st.loc != ComputeLoc::Root || s.isOutput(i) || !st.relations.empty())
      continue;
    if (st.origin != StageOrigin::Op || needsMultiLevelTiling(s, i)) continue;
    std::vector<Step> options{ComputeRootStep{i}};
    if (!st.op->hasReduction()) options.push_back(ComputeInlineStep{i});
    auto cons = s.effectiveConsumers(i);
    if (cons.size() == 1)
      for (int p = 0; p < s.stage(cons[0]).numLeaves(); ++p)
        options.push_back(ComputeAtStep{i, cons[0], p});
    const Step& pick = options[rng.uniformInt(0, static_cast<int64_t>(options.size()) - 1)];
    if (!std::holds_alternative<ComputeRootStep>(pick) && !applyStep(s, pick).empty())
      return std::nullopt;
  }

  // 3-5. Parallel / thread binding, unroll, vectorize.
  static const std::vector<int64_t> cpuUnroll{0, 16, 64, 512}, gpuUnroll{0, 16, 64, 512, 1024};
  const auto& unroll = !task.gpu() ? cpuUnroll : gpuUnroll;
  for (int i = 0; i < s.numStages(); ++i) {
    const auto& st = s.stage(i);
    if (st.isPlaceholder() || st.loc == ComputeLoc::Inlined) continue;
    if (!task.gpu()) {
      // A transposed read-back (a channels-last conv's epilogue): untiled, or in blocks.
      int readAxis = st.loc == ComputeLoc::Root ? transposedReadAxis(s, i) : -1;
      if (readAxis >= 0) {
        static const std::vector<int64_t> blocks{1, 8, 16, 32};
        int64_t b = blocks[rng.uniformInt(0, static_cast<int64_t>(blocks.size()) - 1)];
        auto block = [&](int64_t extent) { // its largest divisor <= b
          auto d = divisors(extent);
          return *std::prev(std::upper_bound(d.begin(), d.end(), b));
        };
        const auto& axes = s.stage(i).op->axes;
        if (!tileTransposedRead(s, i, readAxis, block(axes[readAxis].extent),
                                block(axes.back().extent)))
          return std::nullopt;
      }
      if (s.stage(i).loc == ComputeLoc::Root && !parallelize(s, i, task.target))
        return std::nullopt;
    } else if (st.loc == ComputeLoc::Root && !bindThreads(s, i, task.target, rng)) {
      return std::nullopt;
    }
    if (s.stage(i).op->hasReduction() && s.stage(i).numLeaves() > 0) {
      int64_t v = unroll[rng.uniformInt(0, static_cast<int64_t>(unroll.size()) - 1)];
      if (!applyStep(s, PragmaStep{i, 0, "auto_unroll_max_step", v}).empty()) return std::nullopt;
    }
    if (!task.gpu() && !vectorize(s, i, 16)) return std::nullopt;
  }
  // 6. GPU: shared stages are fetched by the block's threads together.
  if (task.gpu() && !fetchSharedCooperatively(s)) return std::nullopt;
  if (!s.concrete()) return std::nullopt;
  return s;
}

} // namespace wm::search
