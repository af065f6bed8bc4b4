// Sketch rules and generation (see sketch.h). Roadmap:
//  1. Analyses of the current state (its rewritten DAG): needs tiling, element-wise consumer.
//  2. Building blocks: multi-level tiling of a stage ("SSRSRS" on CPU, "SSSRRSRS" on GPU)
//     and a consumer following the tiling of its producer.
//  3. The rules, then the ordered rule lists per target, then the derivation loop.
#include <wm/schedule/steps.h>
#include <wm/search/sketch.h>
#include <wm/support/error.h>

#include <algorithm>

namespace wm::search {

using namespace wm::sched;

namespace {

ir::ComputeDAG currentDag(const State& s) {
  std::vector<ir::Tensor> outs;
  for (int i = 0; i < s.numStages(); ++i)
    if (s.isOutput(i)) outs.push_back(s.stage(i).op);
  return ir::ComputeDAG(outs);
}

bool isCompute(const State& s, int i) {
  return !s.stage(i).isPlaceholder();
}
bool isCacheWriteStage(const State& s, int i) {
  return s.stage(i).origin == StageOrigin::CacheWrite;
}

// Applies a step to a sketch (state and step list); false if it does not apply.
bool push(Sketch& k, const Step& st) {
  if (!applyStep(k.state, st).empty()) return false;
  k.steps.push_back(st);
  return true;
}
void mustPush(Sketch& k, const Step& st) {
  std::string err = applyStep(k.state, st);
  WM_CHECK(err.empty()) << "sketch rule produced an illegal step " << toString(st) << ": " << err;
  k.steps.push_back(st);
}

// Multi-level tiling: spatial loops split into (number of S) parts, reduction loops into (number
// of R) parts, all lengths open; reordered level by level. Returns the split step of each
// spatial axis (indices into the step list).
std::vector<int> multiLevelTile(Sketch& k, int stage, const std::string& structure) {
  int nS = static_cast<int>(std::count(structure.begin(), structure.end(), 'S'));
  int nR = static_cast<int>(std::count(structure.begin(), structure.end(), 'R'));
  const auto& st = k.state.stage(stage);
  std::vector<int> spatialSplits;
  // Split from the last loop to the first so earlier positions stay valid.
  std::vector<std::pair<int, bool>> loops; // (position, spatial)
  for (int p = 0; p < st.numLeaves(); ++p)
    loops.push_back({p, st.leaf(p).kind == IterKind::Spatial});
  std::vector<int> splitOf(loops.size(), -1);
  for (int q = static_cast<int>(loops.size()) - 1; q >= 0; --q) {
    int parts = loops[q].second ? nS : nR;
    int64_t extent = k.state.stage(stage).leaf(loops[q].first).extent;
    splitOf[q] = static_cast<int>(k.steps.size());
    mustPush(k, SplitStep{stage, loops[q].first, extent, std::vector<int64_t>(parts - 1, 0), true});
  }
  // Leaves are now, per original loop q in order, `parts` consecutive iterators.
  std::vector<std::vector<int>> posOf(loops.size());
  int pos = 0;
  for (size_t q = 0; q < loops.size(); ++q) {
    int parts = loops[q].second ? nS : nR;
    for (int l = 0; l < parts; ++l) posOf[q].push_back(pos++);
  }
  std::vector<int> order;
  int sLevel = 0, rLevel = 0;
  for (char c : structure) {
    bool spatial = c == 'S';
    int level = spatial ? sLevel++ : rLevel++;
    for (size_t q = 0; q < loops.size(); ++q)
      if (loops[q].second == spatial) order.push_back(posOf[q][level]);
  }
  mustPush(k, ReorderStep{stage, order});
  for (size_t q = 0; q < loops.size(); ++q)
    if (loops[q].second) spatialSplits.push_back(splitOf[q]);
  return spatialSplits;
}

// The consumer's spatial loops follow the producer's tiling down to `level`; the producer is
// computed at the last loop of that level. Both have the same spatial axes (element-wise).
void followTiling(Sketch& k, int producer, int consumer, const std::vector<int>& splitSteps,
                  int level) {
  int nsp = static_cast<int>(splitSteps.size());
  for (int d = nsp - 1; d >= 0; --d)
    mustPush(k, FollowSplitStep{consumer, d, splitSteps[d], level});
  // Each axis now has level+1 parts, axis-major; reorder level-major.
  const auto& c = k.state.stage(consumer);
  std::vector<int> order;
  for (int l = 0; l <= level; ++l)
    for (int d = 0; d < nsp; ++d) order.push_back(d * (level + 1) + l);
  for (int p = nsp * (level + 1); p < c.numLeaves(); ++p) order.push_back(p);
  mustPush(k, ReorderStep{consumer, order});
  mustPush(k, ComputeAtStep{producer, consumer, level * nsp - 1});
}

const char* structureOf(const SearchTask& t) {
  return !t.gpu() ? "SSRSRS" : "SSSRRSRS";
}

// Ansor's test for splitting a reduction (rfactor on CPU, cross-thread on GPU): a tiled stage
// whose space is small against its reduction and below spaceLimit, or an untiled reduction
// longer than reduceLimit.
RuleResult reductionSplitRule(const State& s, int i, int64_t spaceLimit, int64_t reduceLimit) {
  if (!isCompute(s, i) || isCacheWriteStage(s, i) || !s.stage(i).op->hasReduction())
    return RuleResult::Skip;
  auto [space, red] = spaceAndReduceLength(s, i);
  if (needsMultiLevelTiling(s, i))
    return space > red || space > spaceLimit ? RuleResult::Skip : RuleResult::Apply;
  return red > reduceLimit ? RuleResult::Apply : RuleResult::Skip;
}

// Fuses the reduction loops of stage i into one; returns its position, or -1.
int fuseReductionLoops(Sketch& k, int i) {
  const auto& st = k.state.stage(i);
  std::vector<int> red;
  for (int p = 0; p < st.numLeaves(); ++p)
    if (st.leaf(p).kind == IterKind::Reduce) red.push_back(p);
  if (red.empty()) return -1;
  if (red.size() > 1 && !push(k, FuseStep{i, red})) return -1;
  return red.front();
}

// ---- rules ----

// Inline element-wise stages that are not outputs. CPU: only strictly inlineable ones (no
// branch, no exp, simple in-order access) and layout stages (ir::kLayoutTag: a permutation
// read where its consumer reads it); GPU: all.
class AlwaysInline : public SketchRule {
public:
  const char* name() const override { return "AlwaysInline"; }
  RuleResult meets(const SearchTask& t, const Sketch& k, int i) const override {
    const auto& s = k.state;
    if (!isCompute(s, i) || s.isOutput(i) || s.stage(i).op->hasReduction()) return RuleResult::Skip;
    if (s.stage(i).loc != ComputeLoc::Root || s.stage(i).origin != StageOrigin::Op)
      return RuleResult::Skip;
    if (!t.gpu() && s.stage(i).op->tag != ir::kLayoutTag) {
      auto dag = currentDag(s);
      if (!dag.isStrictlyInlineable(dag.indexOf(s.stage(i).op.get()))) return RuleResult::Skip;
    }
    return RuleResult::ApplyAndSkipRest;
  }
  std::vector<std::pair<Sketch, int>> apply(const SearchTask&, const Sketch& k,
                                            int i) const override {
    Sketch n = k;
    if (!push(n, ComputeInlineStep{i})) return {{k, i - 1}};
    return {{n, i - 1}};
  }
};

// CPU: split the fused reduction and rfactor either part, when the space alone gives too
// little parallelism. Both sketches leave the stage (and the new rf stage) untiled.
class AddRfactor : public SketchRule {
public:
  const char* name() const override { return "AddRfactor"; }
  RuleResult meets(const SearchTask& t, const Sketch& k, int i) const override {
    return reductionSplitRule(k.state, i, 16 * int64_t(t.target.cores), t.target.cores);
  }
  std::vector<std::pair<Sketch, int>> apply(const SearchTask&, const Sketch& k,
                                            int i) const override {
    Sketch base = k;
    int pos = fuseReductionLoops(base, i);
    if (pos < 0) return {};
    int64_t extent = base.state.stage(i).leaf(pos).extent;
    int nsp = base.state.stage(i).numSpatialRoot;
    std::vector<std::pair<Sketch, int>> out;
    for (int part = 0; part < 2; ++part) {
      // The split length stays open in the sketch's steps; the structure is built with a
      // provisional length of 1 (rfactor needs known extents), replaced when annotated.
      Sketch n = base;
      SplitStep sp{i, pos, extent, {1}, true};
      if (!applyStep(n.state, sp).empty()) continue;
      sp.lengths = {0};
      n.steps.push_back(sp);
      if (!push(n, RfactorStep{i, pos + part, nsp})) continue;
      out.push_back({n, i - 1});
    }
    return out;
  }
};

// Tiled stages without an element-wise consumer compute into a local cache first (CPU: as an
// alternative; GPU: always).
class AddCacheWrite : public SketchRule {
public:
  const char* name() const override { return "AddCacheWrite"; }
  RuleResult meets(const SearchTask& t, const Sketch& k, int i) const override {
    const auto& s = k.state;
    if (!isCompute(s, i) || isCacheWriteStage(s, i)) return RuleResult::Skip;
    if (!needsMultiLevelTiling(s, i) || hasSingleElementwiseMatchedConsumer(s, i))
      return RuleResult::Skip;
    return t.gpu() ? RuleResult::ApplyAndSkipRest : RuleResult::Apply;
  }
  std::vector<std::pair<Sketch, int>> apply(const SearchTask&, const Sketch& k,
                                            int i) const override {
    Sketch n = k;
    if (!push(n, CacheWriteStep{i, ir::MemScope::Local})) return {};
    return {{n, i}}; // the local stage, now at i, is tiled next with its copy as consumer
  }
};

// Tile the stage and fuse its element-wise consumer: the consumer follows the outer tile
// levels and the stage is computed inside them (CPU: at level 1 or 2, two sketches; GPU: 3).
class MultiLevelTilingWithFusion : public SketchRule {
public:
  const char* name() const override { return "MultiLevelTilingWithFusion"; }
  RuleResult meets(const SearchTask& t, const Sketch& k, int i) const override {
    const auto& s = k.state;
    if (!isCompute(s, i) || !needsMultiLevelTiling(s, i)) return RuleResult::Skip;
    int c;
    if (!hasSingleElementwiseMatchedConsumer(s, i, &c)) return RuleResult::Skip;
    if (s.stage(c).scope == ir::MemScope::Shared) return RuleResult::Skip;
    return (isCacheWriteStage(s, i) || t.gpu()) ? RuleResult::ApplyAndSkipRest : RuleResult::Apply;
  }
  std::vector<std::pair<Sketch, int>> apply(const SearchTask& t, const Sketch& k,
                                            int i) const override {
    int c;
    hasSingleElementwiseMatchedConsumer(k.state, i, &c);
    std::vector<int> levels = t.gpu() ? std::vector<int>{3} : std::vector<int>{1, 2};
    std::vector<std::pair<Sketch, int>> out;
    for (int level : levels) {
      Sketch n = k;
      auto splits = multiLevelTile(n, i, structureOf(t));
      followTiling(n, i, c, splits, level);
      out.push_back({n, i - 1});
    }
    return out;
  }
};

class MultiLevelTiling : public SketchRule {
public:
  const char* name() const override { return "MultiLevelTiling"; }
  RuleResult meets(const SearchTask&, const Sketch& k, int i) const override {
    return isCompute(k.state, i) && needsMultiLevelTiling(k.state, i) ? RuleResult::ApplyAndSkipRest
                                                                      : RuleResult::Skip;
  }
  std::vector<std::pair<Sketch, int>> apply(const SearchTask& t, const Sketch& k,
                                            int i) const override {
    Sketch n = k;
    multiLevelTile(n, i, structureOf(t));
    return {{n, i - 1}};
  }
};

// GPU: reductions with little space parallelism reduce across the threads of a warp.
class CrossThreadReduction : public SketchRule {
public:
  const char* name() const override { return "CrossThreadReduction"; }
  RuleResult meets(const SearchTask& t, const Sketch& k, int i) const override {
    return reductionSplitRule(k.state, i, t.target.gpu.maxThreadsPerBlock, t.target.gpu.warpSize);
  }
  std::vector<std::pair<Sketch, int>> apply(const SearchTask& t, const Sketch& k,
                                            int i) const override {
    Sketch n = k;
    int pos = fuseReductionLoops(n, i);
    if (pos < 0) return {};
    int64_t extent = n.state.stage(i).leaf(pos).extent;
    if (!push(n, SplitStep{i, pos, extent, {t.target.gpu.warpSize}, true})) return {};
    if (!push(n, AnnotationStep{i, pos + 1, Annotation::ThreadX})) return {};
    return {{n, i - 1}};
  }
};

// GPU: a direct producer of a tiled stage is read through shared memory, fetched at the
// outermost reduction tile of its consumer.
class AddCacheRead : public SketchRule {
public:
  const char* name() const override { return "AddCacheRead"; }
  RuleResult meets(const SearchTask&, const Sketch& k, int i) const override {
    const auto& s = k.state;
    if (s.stage(i).loc == ComputeLoc::Inlined || s.stage(i).origin == StageOrigin::CacheRead)
      return RuleResult::Skip;
    auto cons = s.effectiveConsumers(i);
    if (cons.size() != 1) return RuleResult::Skip;
    int c = cons[0];
    auto direct = s.consumers(i);
    if (std::find(direct.begin(), direct.end(), c) == direct.end()) return RuleResult::Skip;
    if (!needsMultiLevelTiling(s, c)) return RuleResult::Skip;
    // Without a reduction there is no reduction tile to fetch at (nor reuse across one).
    if (!s.stage(c).op->hasReduction()) return RuleResult::Skip;
    for (int p = 0; p < s.stage(c).numLeaves(); ++p)
      if (s.stage(c).leaf(p).kind == IterKind::Reduce &&
          s.stage(c).leaf(p).annotation == Annotation::ThreadX)
        return RuleResult::Skip; // cross-thread reduction
    return RuleResult::ApplyAndSkipRest;
  }
  std::vector<std::pair<Sketch, int>> apply(const SearchTask& t, const Sketch& k,
                                            int i) const override {
    Sketch n = k;
    int c = k.state.effectiveConsumers(i)[0];
    if (!push(n, CacheReadStep{i, ir::MemScope::Shared, {c}})) return {{k, i - 1}};
    int consumer = c + 1; // shifted by the new stage
    const auto& cs = n.state.stage(consumer);
    // The outermost reduction tile ends at the last reduce loop of level 0: in SSSRRSRS the
    // loops are S0 S1 S2 R0 ...; fetch at the last loop of R0.
    int nsp = 0, nred = 0;
    for (int p = 0; p < cs.numLeaves(); ++p) (cs.leaf(p).kind == IterKind::Spatial ? nsp : nred)++;
    std::string structure = structureOf(t);
    int sPer = static_cast<int>(std::count(structure.begin(), structure.end(), 'S'));
    int rPer = static_cast<int>(std::count(structure.begin(), structure.end(), 'R'));
    int target = -1;
    if (nsp % sPer == 0 && nred % rPer == 0 && nred > 0)
      target = 3 * (nsp / sPer) + nred / rPer - 1;
    if (target < 0 || !push(n, ComputeAtStep{i + 1, consumer, target})) return {{n, i - 1}};
    return {{n, i - 1}};
  }
};

class SkipStage : public SketchRule {
public:
  const char* name() const override { return "SkipStage"; }
  RuleResult meets(const SearchTask&, const Sketch&, int) const override {
    return RuleResult::Apply;
  }
  std::vector<std::pair<Sketch, int>> apply(const SearchTask&, const Sketch& k,
                                            int i) const override {
    return {{k, i - 1}};
  }
};

} // namespace

std::pair<int64_t, int64_t> spaceAndReduceLength(const State& s, int i) {
  const auto& op = *s.stage(i).op;
  int64_t space = 1, red = 1;
  for (auto& a : op.axes) space *= a.extent;
  for (auto& a : op.reduceAxes) red *= a.extent;
  return {space, red};
}

bool needsMultiLevelTiling(const State& s, int i) {
  if (!isCompute(s, i)) return false;
  auto dag = currentDag(s);
  return dag.needsMultiLevelTiling(dag.indexOf(s.stage(i).op.get()));
}

bool hasSingleElementwiseMatchedConsumer(const State& s, int i, int* consumer) {
  auto eff = s.effectiveConsumers(i);
  if (eff.size() != 1) return false;
  auto dag = currentDag(s);
  int cur = i;
  while (true) {
    auto direct = s.consumers(cur);
    if (direct.size() != 1) return false;
    int d = direct[0];
    if (!dag.isElementwiseMatch(dag.indexOf(s.stage(cur).op.get()),
                                dag.indexOf(s.stage(d).op.get())))
      return false;
    if (d == eff[0]) {
      if (consumer) *consumer = d;
      return true;
    }
    if (s.stage(d).loc != ComputeLoc::Inlined) return false;
    cur = d;
  }
}

// CPU order (Ansor's): inlining first, so later rules see effective consumers; rfactor before
// cache write, because an rfactor sketch must not also get a cache write; tiling with fusion
// before plain tiling, which is the fallback; SkipStage last.
std::vector<std::unique_ptr<SketchRule>> cpuSketchRules() {
  std::vector<std::unique_ptr<SketchRule>> r;
  r.push_back(std::make_unique<AlwaysInline>());
  r.push_back(std::make_unique<AddRfactor>());
  r.push_back(std::make_unique<AddCacheWrite>());
  r.push_back(std::make_unique<MultiLevelTilingWithFusion>());
  r.push_back(std::make_unique<MultiLevelTiling>());
  r.push_back(std::make_unique<SkipStage>());
  return r;
}

// GPU order (Ansor's, without the special-case compute location rule): cache reads first,
// since they are decided at the producer once its consumer is tiled; cross-thread reduction
// before cache write and tiling.
std::vector<std::unique_ptr<SketchRule>> gpuSketchRules() {
  std::vector<std::unique_ptr<SketchRule>> r;
  r.push_back(std::make_unique<AddCacheRead>());
  r.push_back(std::make_unique<AlwaysInline>());
  r.push_back(std::make_unique<CrossThreadReduction>());
  r.push_back(std::make_unique<AddCacheWrite>());
  r.push_back(std::make_unique<MultiLevelTilingWithFusion>());
  r.push_back(std::make_unique<MultiLevelTiling>());
  r.push_back(std::make_unique<SkipStage>());
  return r;
}

std::vector<Sketch> generateSketches(const SearchTask& task) {
  auto rules = !task.gpu() ? cpuSketchRules() : gpuSketchRules();
  State init(task.dag);
  std::vector<std::pair<Sketch, int>> now{{Sketch{{}, init}, init.numStages() - 1}}, next;
  std::vector<Sketch> out;
  while (!now.empty()) {
    next.clear();
    for (auto& [k, i] : now) {
      if (i < 0) {
        out.push_back(k);
        continue;
      }
      for (auto& rule : rules) {
        RuleResult r = rule->meets(task, k, i);
        if (r == RuleResult::Skip) continue;
        for (auto& p : rule->apply(task, k, i)) next.push_back(std::move(p));
        if (r == RuleResult::ApplyAndSkipRest) break;
      }
    }
    std::swap(now, next);
  }
  return out;
}

} // namespace wm::search
