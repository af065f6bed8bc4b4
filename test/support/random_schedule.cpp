// Random schedule generator (see random_schedule.h).
#include "random_schedule.h"

#include <algorithm>

namespace wm::testing {

using namespace wm::sched;

namespace {

template <typename T> const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[static_cast<size_t>(rng.uniformInt(0, static_cast<int64_t>(v.size()) - 1))];
}

std::vector<int> computeStages(const State& s) {
  std::vector<int> out;
  for (int i = 0; i < s.numStages(); ++i)
    if (!s.stage(i).isPlaceholder()) out.push_back(i);
  return out;
}

std::vector<int> splitSteps(const State& s) {
  std::vector<int> out;
  for (size_t i = 0; i < s.steps().size(); ++i)
    if (std::holds_alternative<SplitStep>(s.steps()[i])) out.push_back(static_cast<int>(i));
  return out;
}

Step candidate(const State& s, Rng& rng) {
  auto stages = computeStages(s);
  int st = pick(rng, stages);
  const auto& stage = s.stage(st);
  int n = stage.numLeaves();
  int leaf = n > 0 ? static_cast<int>(rng.uniformInt(0, n - 1)) : 0;
  int64_t extent = n > 0 ? stage.leaf(leaf).extent : 1;
  switch (rng.uniformInt(0, 15)) {
  case 0:
  case 1:
  case 2: { // split; factors are any numbers (non-divisors too) whose product stays below
            // about twice the extent, so that guarded loops do not blow up the iteration space
    std::vector<int64_t> lengths;
    int parts = static_cast<int>(rng.uniformInt(1, 3));
    int64_t budget = 2 * std::max<int64_t>(extent, 1) + 2, prod = 1;
    for (int k = 0; k < parts; ++k) {
      int64_t l = rng.uniformInt(1, std::max<int64_t>(1, budget / prod));
      prod *= l;
      lengths.push_back(l);
    }
    return SplitStep{st, leaf, extent, lengths, rng.bernoulli(0.7)};
  }
  case 3: { // fuse 2-3 consecutive loops
    int len = static_cast<int>(rng.uniformInt(2, 3));
    int first = static_cast<int>(rng.uniformInt(0, std::max(0, n - len)));
    std::vector<int> iters;
    for (int k = first; k < std::min(n, first + len); ++k) iters.push_back(k);
    return FuseStep{st, iters};
  }
  case 4: { // reorder: a random permutation
    std::vector<int> order(n);
    for (int k = 0; k < n; ++k) order[k] = k;
    for (int k = n - 1; k > 0; --k) std::swap(order[k], order[rng.uniformInt(0, k)]);
    return ReorderStep{st, order};
  }
  case 5:
  case 6: { // compute at the (only) consumer
    auto cons = s.effectiveConsumers(st);
    if (cons.size() != 1) return ComputeRootStep{st};
    int c = cons[0];
    int cl = s.stage(c).numLeaves();
    return ComputeAtStep{st, c, cl > 0 ? static_cast<int>(rng.uniformInt(0, cl - 1)) : 0};
  }
  case 7: return rng.bernoulli(0.8) ? Step(ComputeInlineStep{st}) : Step(ComputeRootStep{st});
  case 8: { // cache read of any stage (placeholders too) for a subset of its readers
    int p = static_cast<int>(rng.uniformInt(0, s.numStages() - 1));
    auto cons = s.consumers(p);
    std::vector<int> readers;
    for (int c : cons)
      if (rng.bernoulli(0.6)) readers.push_back(c);
    if (readers.empty() && !cons.empty()) readers.push_back(cons[0]);
    return CacheReadStep{p, rng.bernoulli(0.5) ? ir::MemScope::Shared : ir::MemScope::Local,
                         readers};
  }
  case 9:
    return CacheWriteStep{st, rng.bernoulli(0.7) ? ir::MemScope::Local : ir::MemScope::Global};
  case 10: {
    int factorIter = static_cast<int>(rng.uniformInt(0, stage.numSpatialRoot));
    return RfactorStep{st, leaf, factorIter};
  }
  case 11:
  case 12: {
    static const std::vector<Annotation> kinds{Annotation::Unroll,   Annotation::Vectorize,
                                               Annotation::Parallel, Annotation::VThread,
                                               Annotation::ThreadX,  Annotation::BlockX};
    return AnnotationStep{st, leaf, pick(rng, kinds)};
  }
  case 13: {
    static const std::vector<int64_t> steps{0, 16, 64, 512};
    return PragmaStep{st, leaf, "auto_unroll_max_step", pick(rng, steps)};
  }
  case 14: {
    int64_t factor = int64_t(1) << rng.uniformInt(1, 5);
    return StorageAlignStep{
        st, static_cast<int>(rng.uniformInt(0, std::max(0, stage.numSpatialRoot - 1))), factor,
        rng.uniformInt(0, factor - 1)};
  }
  default: { // follow an earlier split
    auto splits = splitSteps(s);
    if (splits.empty()) return ComputeRootStep{st};
    int src = pick(rng, splits);
    const auto& sp = std::get<SplitStep>(s.steps()[src]);
    if (rng.bernoulli(0.5))
      return FollowSplitStep{
          st, leaf, src,
          static_cast<int>(rng.uniformInt(1, static_cast<int64_t>(sp.lengths.size()) + 1))};
    return FollowFusedSplitStep{
        st,
        leaf,
        {src},
        static_cast<int>(rng.uniformInt(0, static_cast<int64_t>(sp.lengths.size()) - 1)),
        rng.bernoulli(0.5)};
  }
  }
}

} // namespace

std::vector<Step> randomSchedule(const ir::ComputeDAG& dag, Rng& rng, int maxSteps, State* state) {
  State s(dag);
  int target = static_cast<int>(rng.uniformInt(1, maxSteps));
  for (int attempt = 0; attempt < 6 * maxSteps && static_cast<int>(s.steps().size()) < target;
       ++attempt)
    applyStep(s, candidate(s, rng)); // illegal candidates are rejected and skipped
  if (state) *state = s;
  return s.steps();
}

double loopWork(const lower::Stmt& s, bool threadLoopsOnce) {
  using namespace wm::lower;
  if (!s.defined()) return 0;
  switch (s.kind()) {
  case StmtKind::For:
    return (threadLoopsOnce && s.as<ForNode>()->forKind == ForKind::ThreadBound
                ? 1.0
                : static_cast<double>(s.as<ForNode>()->extent)) *
           loopWork(s.as<ForNode>()->body, threadLoopsOnce);
  case StmtKind::Store: return 1;
  case StmtKind::Allocate: return loopWork(s.as<AllocateNode>()->body, threadLoopsOnce);
  case StmtKind::IfThenElse:
    return loopWork(s.as<IfThenElseNode>()->then, threadLoopsOnce) +
           loopWork(s.as<IfThenElseNode>()->otherwise, threadLoopsOnce);
  case StmtKind::Seq: {
    double w = 0;
    for (auto& x : s.as<SeqNode>()->stmts) w += loopWork(x, threadLoopsOnce);
    return w;
  }
  case StmtKind::Attr: return loopWork(s.as<AttrNode>()->body, threadLoopsOnce);
  case StmtKind::Barrier: return 0;
  }
  return 0;
}

bool hasThreadBinding(const lower::Stmt& s) {
  return lower::anyStmt(s, [](const lower::Stmt& x) {
    auto* f = x.as<lower::ForNode>();
    return f && f->forKind == lower::ForKind::ThreadBound;
  });
}

std::vector<std::string> smallWorkloads() {
  return {
      "gemm:M=12,N=10,K=7",
      "gemm:M=16,N=16,K=16",
      "matmul:M=5,N=9,K=4",
      "matmul:M=8,N=4,K=12",
      "dense:M=6,N=10,K=8",
      "dense:M=3,N=7,K=5",
      "batch_matmul:B=2,M=6,N=5,K=4",
      "batch_matmul:B=3,M=4,N=8,K=6",
      "conv1d:C=3,L=12,K=4,R=3,pad=1",
      "conv1d:C=4,L=11,K=4,R=3,stride=2,dilation=2,groups=2",
      "conv2d:C=3,H=7,W=7,K=4,R=3,S=3,pad=1",
      "conv2d:N=2,C=4,H=6,W=5,K=4,R=3,S=2,stride=2,groups=2",
      "depthwise_conv2d:C=4,H=6,W=6,R=3,S=3,pad=1",
      "depthwise_conv2d:C=3,H=7,W=5,R=3,S=3,stride=2,multiplier=2",
      "conv3d:C=2,D=4,H=4,W=5,K=3,T=3,R=3,S=3,pad=1",
      "conv3d:C=2,D=5,H=4,W=4,K=2,T=2,R=2,S=2,stride=2",
      "conv2d_transpose:C=3,H=4,W=4,K=2,R=3,S=3,stride=2,pad=1",
      "conv2d_transpose:C=2,H=3,W=5,K=4,R=2,S=2,stride=2,groups=2",
      "max_pool2d:C=3,H=7,W=7,R=3,S=3,stride=2,pad=1",
      "max_pool2d:C=2,H=6,W=5,R=2,S=2,stride=2",
      "avg_pool2d:C=3,H=7,W=7,R=3,S=3,stride=2,pad=1",
      "avg_pool2d:C=2,H=6,W=6,R=2,S=2,stride=2",
      "global_avg_pool2d:C=4,H=5,W=5",
      "global_avg_pool2d:N=2,C=3,H=4,W=6",
      "bias_add:shape=2x5x3x3,axis=1",
      "bias_add:shape=7x9,axis=1",
      "relu:shape=5x7",
      "relu:shape=2x3x4x5",
      "clip:shape=6x5,min=-0.5,max=0.5",
      "clip:shape=31",
      "relu6:shape=4x9",
      "relu6:shape=2x3x3",
      "sigmoid:shape=6x7",
      "sigmoid:shape=17",
      "tanh:shape=6x7",
      "tanh:shape=3x2x5",
      "gelu:shape=6x7",
      "gelu:shape=4x9",
      "add:shape=4x5",
      "add:shape=2x3x4,shape_b=3x1",
      "sub:shape=4x5",
      "sub:shape=3x6,shape_b=6",
      "mul:shape=4x5",
      "mul:shape=2x1x4,shape_b=3x1",
      "div:shape=4x5",
      "div:shape=3x7,shape_b=3x1",
      "batch_norm:shape=2x4x3x3",
      "batch_norm:shape=3x6",
      "softmax:M=4,N=9",
      "softmax:M=3,N=16",
      "layer_norm:M=4,N=9",
      "layer_norm:M=2,N=16",
      "norm:B=2,M=5,N=6",
      "norm:M=8,N=3",
      "conv2d_bias_relu:C=3,H=6,W=6,K=4,R=3,S=3,pad=1",
      "conv2d_bias_relu:C=2,H=7,W=5,K=3,R=3,S=3,stride=2",
      "conv2d_cl_bias_relu:C=3,H=7,W=7,K=8,R=3,S=3,pad=1,stride=2",
      "dense_bias_gelu:M=4,N=8,K=6",
      "dense_bias_gelu:M=3,N=5,K=7",
  };
}

} // namespace wm::testing
