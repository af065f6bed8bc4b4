// The heuristic schedule (see heuristic.h).
#include <wm/ir/visitor.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/search/heuristic.h>
#include <wm/search/sketch.h>
#include <wm/support/int_math.h>

#include <algorithm>

namespace wm::search {

using namespace wm::sched;

namespace {

// Rules of thumb for the tile sizes (elements of fp32). The register tile is rows x vectors
// accumulators: at most 16 (enough independent FMAs to cover their latency on two ports, and
// each loaded vector used by every row), and with the loaded vectors and a broadcast within
// the vector registers (maxRows).
constexpr int64_t kAccumulators = 16;      ///< vector accumulators of the register tile, at most
constexpr int64_t kVectorsPerRow = 4;      ///< vectors along the vector axis, innermost level
constexpr int64_t kRowsPerCacheTile = 128; ///< register-reuse axis, both inner levels
constexpr int64_t kColsPerCacheTile = 512; ///< vector axis, both inner levels
constexpr int64_t kReducePerTile = 64;     ///< product of the inner reduction tiles
constexpr int64_t kUnrollMaxStep = 64;

int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, std::max<int64_t>(limit, 1)); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// Rows of a register tile `vectors` vectors wide: rows x vectors accumulators, the vectors
// loaded and one broadcast in the registers. With 32 registers (AVX-512) the 16-accumulator
// cap decides (4 x 4); with 16 (AVX2) the registers do: 6 x 2, 2 x 4, 14 x 1. A 4 x 4 tile
// spilled there: a 3x3 conv ran at 84 GFLOP/s against 165 with 4 x 2, GEMM 1024 at 77
// against 120-139 with 6 x 2 (docs/search.md).
int64_t maxRows(int64_t vectors, const target::Target& hw) {
  int64_t inRegisters = (hw.vectorRegisters() - vectors - 1) / vectors;
  return std::max<int64_t>(1, std::min(kAccumulators / vectors, inRegisters));
}

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A tile length at most `limit` (a multiple of `step`) for an axis of extent n: its largest
// divisor, unless every divisor is under half the limit (a prime extent such as ViT's 197
// tokens): then the longest length whose last, partial tile pads the axis by at most
// kMaxPadding (lowering guards the partial tile; hoist_guards keeps the guard out of the
// full tiles).
constexpr double kMaxPadding = 0.06;
// The vector axis of a register tile may pad more: one lane in eight. A pointwise conv over a
// 14 x 14 plane (196) had vectors of 7 lanes (its largest divisor under 8), which LLVM loads
// in three pieces; 8 lanes with a masked last vector, 2 vectors x 6 rows, ran ResNet-50's
// 256 -> 1024 at 14 x 14 at 106 GFLOP/s against 75, MobileNetV2's 96 -> 576 at 119 against 71
// (docs/benchmarks.md). A 7 x 7 plane (49: 14% with 8 lanes) keeps 7: it measured no better.
constexpr double kMaxVectorPadding = 0.125;
int64_t tileLength(int64_t n, int64_t limit, int64_t step = 1) {
  int64_t d = largestDivisorAtMost(n, limit);
  if (d % step == 0 && 2 * d >= std::min(n, limit)) return d;
  for (int64_t l = std::min(n, limit) / step * step; l > d && l >= step; l -= step)
    if (static_cast<double>(ceilDiv(n, l) * l - n) <= kMaxPadding * static_cast<double>(n))
      return l;
  return d;
}

// The rows of a register tile, at most `limit`: the limit itself, or the longest length
// under it, when its partial last tile pads the axis by at most kMaxPadding and is one of at
// least kMinTilesForPartial, before a shorter divisor (GEMM 1024 on AVX2: 6 rows of 2
// vectors, 12 accumulators, not 4 rows and 8: 120-139 GFLOP/s against 88-94); else the
// largest divisor. The partial tile guards each row inside the reduction, its accumulators
// stay in memory, and it runs several times slower: 64 output channels in 5 tiles of 13 ran
// a pointwise conv at 30-40 GFLOP/s, 65 at 75.
constexpr int64_t kMinTilesForPartial = 16;
int64_t registerRows(int64_t n, int64_t limit) {
  int64_t d = largestDivisorAtMost(n, limit);
  for (int64_t l = std::min(n, limit); l > d; --l)
    if (static_cast<double>(ceilDiv(n, l) * l - n) <= kMaxPadding * static_cast<double>(n) &&
        ceilDiv(n, l) >= kMinTilesForPartial)
      return l;
  return d;
}

bool mentions(const ir::Expr& e, const ir::VarNode* v) {
  bool found = false;
  ir::postOrderVisit(e, [&](const ir::Expr& x) { found |= x.as<ir::VarNode>() == v; });
  return found;
}

// The tile lengths of one multi-level tiled stage: per spatial axis its inner parts (S1, S2,
// S3), per reduction axis its inner part; the outermost parts take the rest.
struct TilePlan {
  std::vector<std::vector<int64_t>> spatial;
  std::vector<int64_t> reduce;
};

TilePlan planTiles(const ir::OperationNode& op, const target::Target& hw) {
  int n = static_cast<int>(op.axes.size());
  TilePlan p;
  p.spatial.assign(n, {1, 1, 1});
  // The vector axis: the innermost spatial axis longer than 1.
  int v = n - 1;
  while (v > 0 && op.axes[v].extent <= 1) --v;
  if (v < 0) return p;
  // The input read contiguously along it, and the axis that input does not depend on: its
  // vector is reused across that axis (GEMM: the rows of A; convolution: output channels).
  const ir::VarNode* vv = op.axes[v].var.node();
  std::vector<std::vector<ir::Expr>> vectorReads;
  if (op.body.defined())
    ir::postOrderVisit(op.body, [&](const ir::Expr& x) {
      if (auto* r = x.as<ir::TensorReadNode>())
        if (!r->indices.empty() && mentions(r->indices.back(), vv))
          vectorReads.push_back(r->indices);
    });
  // Whether an index of the vectorized input mentions axis d.
  auto readsAlong = [&](int d) {
    bool used = false;
    for (const auto& idx : vectorReads)
      for (const auto& e : idx) used |= mentions(e, op.axes[d].var.node());
    return used;
  };
  int reuse = -1;
  for (int d = n - 1; d >= 0 && reuse < 0; --d)
    if (d != v && op.axes[d].extent > 1 && !readsAlong(d)) reuse = d;
  int64_t lanes = std::max(1, hw.vectorBytes / 4);
  int64_t ve = op.axes[v].extent;
  // Whole vectors when an input is read contiguously along the axis (else its lanes are
  // gathered: one vector at most), else the longest part of one vector. An extent that is no
  // multiple of the vector (197 tokens, a 14 x 14 plane) still gets whole vectors when its
  // last, partial tile pads the axis by at most kMaxVectorPadding (lowering masks its lanes).
  int64_t v3 = largestDivisorAtMost(ve, lanes);
  // A weight packed in column blocks (frontend::kWeightBlock), read at [j / b, k, j % b]: the
  // register tile is exactly one block wide (other lengths split its lanes across blocks, and
  // the lanes are gathered; packedBlock).
  int64_t block = packedBlock(op, v);
  if (block && (block % lanes || ve % block || block / lanes > kVectorsPerRow)) block = 0;
  if (block) {
    v3 = block;
  } else if (!vectorReads.empty() && (ve % lanes == 0 || ve >= 2 * lanes)) {
    // Vectors (up to kVectorsPerRow, dividing the extent or padding it little) x rows (up to
    // maxRows) with the most FMAs per load: rows x vectors FMAs for rows + vectors loads
    // (AVX-512: GEMM 4 x 4; a reuse axis of 7: 2 vectors x 7 rows, not 4 x 1; of 56 with 9
    // vectors: 3 x 4, not 1 x 14. AVX2: GEMM 2 vectors x 6 rows).
    double best = 0;
    for (int64_t nv = kVectorsPerRow; nv >= 1; nv /= 2) {
      int64_t pad = ceilDiv(ve, lanes * nv) * lanes * nv - ve;
      if (ve % lanes == 0 ? (ve / lanes) % nv != 0
                          : static_cast<double>(pad) > kMaxVectorPadding * static_cast<double>(ve))
        continue;
      int64_t rows = reuse >= 0 ? registerRows(op.axes[reuse].extent, maxRows(nv, hw)) : 1;
      double perLoad = static_cast<double>(rows * nv) / static_cast<double>(rows + nv);
      if (perLoad > best) {
        best = perLoad;
        v3 = lanes * nv;
      }
    }
  }
  // (The cache tiles count whole inner tiles and stay within the extent.)
  int64_t v2 = largestDivisorAtMost(ceilDiv(ve, v3), std::min(kColsPerCacheTile, ve) / v3);
  int64_t r3 = 1, r2 = 1;
  if (reuse >= 0) {
    int64_t re = op.axes[reuse].extent;
    r3 = registerRows(re, maxRows(ceilDiv(v3, lanes), hw));
    r2 = largestDivisorAtMost(ceilDiv(re, r3), std::min(kRowsPerCacheTile, re) / r3);
  }
  // When the reuse axis is whole in the cache tile, the other spatial axes the vectorized
  // input does not depend on join it, outer ones last, up to kRowsPerCacheTile rows in all (a
  // channels-last conv's output rows beside its columns: each loaded weight vector then serves
  // every output of a 7 x 7 plane, where one row at a time read the weights 7 times).
  std::vector<int64_t> extra(static_cast<size_t>(n), 1);
  bool anyExtra = false;
  if (reuse >= 0 && r2 * r3 >= op.axes[reuse].extent) {
    int64_t rows = op.axes[reuse].extent;
    for (int d = reuse - 1; d >= 0; --d) {
      if (d == v || op.axes[d].extent <= 1 || readsAlong(d)) continue;
      extra[d] = largestDivisorAtMost(op.axes[d].extent, kRowsPerCacheTile / rows);
      rows *= extra[d];
      anyExtra |= extra[d] > 1;
    }
  }
  // Enough outer tiles for the parallel loop: give the cache tiles back first (with such extra
  // rows the vector axis's first: each thread then reads its own part of the weights once).
  auto outer = [&] {
    int64_t deg = 1;
    for (int d = 0; d < n; ++d) {
      int64_t inner = d == v ? v2 * v3 : d == reuse ? r2 * r3 : extra[d];
      deg *= ceilDiv(op.axes[d].extent, inner);
    }
    return deg;
  };
  auto shrinkExtra = [&] {
    for (int d = 0; d < n; ++d) // the outermost first
      if (extra[d] > 1) {
        extra[d] = largestDivisorAtMost(extra[d], extra[d] / 2);
        return true;
      }
    return false;
  };
  // The factor by which giving a cache tile back shrinks it: the rows' first, unless that
  // loses more (11 rows of tiles have no divisor near half: ViT's 197 tokens in 6-row tiles
  // fell from 66 rows to 6, and its MLP's second GEMM read its 2.4 MB of weights 33 times).
  auto shrinkBy = [](int64_t t) { return t / largestDivisorAtMost(t, t / 2); };
  int64_t want = 4 * int64_t(hw.cores);
  while (outer() < want) {
    if (anyExtra && v2 > 1)
      v2 = largestDivisorAtMost(v2, v2 / 2);
    else if (shrinkExtra())
      continue;
    else if (r2 > 1 && (v2 == 1 || shrinkBy(r2) <= shrinkBy(v2)))
      r2 = largestDivisorAtMost(r2, r2 / 2);
    else if (v2 > 1)
      v2 = largestDivisorAtMost(v2, v2 / 2);
    else if (r3 > 1)
      r3 = largestDivisorAtMost(r3, r3 / 2);
    else
      break;
  }
  p.spatial[v] = {1, v2, v3};
  if (reuse >= 0) p.spatial[reuse] = {1, r2, r3};
  for (int d = 0; d < n; ++d)
    if (extra[d] > 1) p.spatial[d] = {1, extra[d], 1};
  // Reductions: the innermost axes whole while they fit (kernel windows), then a block.
  p.reduce.assign(op.reduceAxes.size(), 1);
  int64_t budget = kReducePerTile;
  for (int r = static_cast<int>(op.reduceAxes.size()) - 1; r >= 0 && budget > 1; --r) {
    int64_t f = tileLength(op.reduceAxes[r].extent, budget);
    p.reduce[r] = f;
    budget /= f;
  }
  return p;
}

// A reduction with next to no spatial iterations and many terms: its nested reduction loops
// end each row's vector partial sums with a horizontal add (the norm ran 2.7x slower than one
// fused loop, which rfactor with an inner length of 1 gives: the factored stage reduces the
// fused axis in one loop that LLVM vectorizes, as Ansor's best norm schedules do).
constexpr int64_t kRfactorMaxSpatial = 16;
constexpr int64_t kRfactorMinReduce = 4096;
bool wantsRfactor(const ir::ComputeDAG& dag) {
  for (const auto& op : dag.ops()) {
    if (!op->hasReduction()) continue;
    int64_t spatial = 1, reduce = 1;
    bool small = true, large = false;
    for (const auto& a : op->axes) small &= checkedMul(spatial, a.extent, &spatial);
    for (const auto& a : op->reduceAxes) large |= !checkedMul(reduce, a.extent, &reduce);
    if (small && spatial <= kRfactorMaxSpatial && (large || reduce >= kRfactorMinReduce))
      return true;
  }
  return false;
}

// The sketch's open split lengths filled by the plan of the stage each split tiles, replayed
// step by step (a split names its loop by its position at that time); rfactorFirst: the
// factored loop of an rfactor sketch has length 1 (wantsRfactor).
std::optional<State> fillTiles(const SearchTask& task, const Sketch& sketch, bool rfactorFirst) {
  State s(task.dag);
  for (Step st : sketch.steps) {
    if (auto* sp = std::get_if<SplitStep>(&st)) {
      if (std::find(sp->lengths.begin(), sp->lengths.end(), 0) != sp->lengths.end()) {
        const StageNode& stage = s.stage(sp->stage);
        int id = stage.leaves.at(sp->iter);
        auto plan = planTiles(*stage.op, task.target);
        std::vector<int64_t> lengths;
        if (id < stage.numSpatialRoot)
          lengths = plan.spatial.at(id);
        else if (id < stage.numRoot)
          lengths = {plan.reduce.at(id - stage.numSpatialRoot)};
        else if (rfactorFirst) // a fused reduction (rfactor): one loop
          lengths = {1};
        else // a fused reduction (rfactor): a vector of partial sums
          lengths = {largestDivisorAtMost(sp->extent, std::max(1, task.target.vectorBytes / 4))};
        lengths.resize(sp->lengths.size(), 1);
        // Innermost first, their product within the extent (the plan's lengths may leave a
        // partial last tile).
        int64_t prod = 1;
        for (auto it = lengths.rbegin(); it != lengths.rend(); ++it) {
          *it = std::clamp<int64_t>(*it, 1, std::max<int64_t>(1, sp->extent / prod));
          prod *= *it;
        }
        sp->lengths = lengths;
      }
    }
    if (!applyStep(s, st).empty()) return std::nullopt;
  }
  return s;
}

// A channels-last conv's fused epilogue reads the [N, H, W, K] result back as NCHW: the K and
// W axes in blocks of up to kTransposeBlock (tileTransposedRead).
constexpr int64_t kTransposeBlock = 16;
bool tileReadBack(State& s, int i) {
  int r = transposedReadAxis(s, i);
  if (r < 0) return true;
  const auto& axes = s.stage(i).op->axes;
  return tileTransposedRead(s, i, r, tileLength(axes[r].extent, kTransposeBlock),
                            tileLength(axes.back().extent, kTransposeBlock));
}

std::optional<State> annotateFixed(const SearchTask& task, State s) {
  for (int i = 0; i < s.numStages(); ++i) {
    const auto& st = s.stage(i);
    if (st.isPlaceholder() || st.loc == ComputeLoc::Inlined) continue;
    if (st.loc == ComputeLoc::Root && !tileReadBack(s, i)) return std::nullopt;
    if (s.stage(i).loc == ComputeLoc::Root && !parallelize(s, i, task.target)) return std::nullopt;
    if (s.stage(i).op->hasReduction() && s.stage(i).numLeaves() > 0 &&
        !applyStep(s, PragmaStep{i, 0, "auto_unroll_max_step", kUnrollMaxStep}).empty())
      return std::nullopt;
    if (!vectorize(s, i, kVectorsPerRow * std::max(1, task.target.vectorBytes / 4)))
      return std::nullopt;
  }
  if (!s.concrete()) return std::nullopt;
  return s;
}

// Which sketch: rfactor only where a reduction has next to no spatial iterations (a norm: one
// output, 65536 terms), then a local accumulator (cache write), the consumer fused deepest.
std::tuple<int, int, int, int> preference(const Sketch& k, bool rfactorFirst) {
  int rfactor = 0, rfIter = 0, cacheWrite = 0, level = 0;
  for (const auto& st : k.steps) {
    rfactor |= std::holds_alternative<RfactorStep>(st);
    // (the factored loop innermost: the factored stage keeps the fused reduction whole)
    if (auto* rf = std::get_if<RfactorStep>(&st)) rfIter = rfactorFirst ? rf->iter : 0;
    cacheWrite |= std::holds_alternative<CacheWriteStep>(st);
    if (auto* f = std::get_if<FollowSplitStep>(&st)) level = std::max(level, f->nSplit);
  }
  return {rfactorFirst ? rfactor : -rfactor, rfIter, cacheWrite, level};
}

} // namespace

std::optional<std::vector<Step>> heuristicSchedule(const SearchTask& task) {
  if (task.gpu()) return std::nullopt;
  auto sketches = generateSketches(task);
  std::vector<size_t> order(sketches.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  bool rfactorFirst = wantsRfactor(task.dag);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return preference(sketches[a], rfactorFirst) > preference(sketches[b], rfactorFirst);
  });
  for (size_t i : order) {
    auto filled = fillTiles(task, sketches[i], rfactorFirst);
    if (!filled) continue;
    if (auto s = annotateFixed(task, std::move(*filled))) return s->steps();
  }
  return std::nullopt;
}

} // namespace wm::search
