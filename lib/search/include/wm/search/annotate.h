// Random annotation of sketches into complete, measurable schedules (Ansor's init population
// rules), in this order: fill tile sizes (every open split gets a random factorization of its
// extent, innermost factor <= 64), change compute locations (stages neither tiled nor needing
// tiling: inline, root or a legal compute-at), a transposed read-back in blocks of 1, 8, 16
// or 32 (a channels-last conv's epilogue), parallel (outer spatial loops fused up to
// 16 x cores), auto-unroll pragma (stages with a reduction), vectorize (innermost spatial
// loops fused while at most 16 lanes); on GPU, thread binding (blockIdx / vthread / threadIdx
// with the vthread and warp-size checks) and unroll. A step that does not apply makes the
// candidate invalid: it is rejected, never measured.
#pragma once

#include <wm/search/sketch.h>
#include <wm/support/rng.h>

#include <optional>

namespace wm::search {

/// One random complete schedule from a sketch (its state, whose steps() are the schedule), or
/// nullopt if the draw was invalid.
std::optional<sched::State> annotate(const SearchTask& task, const Sketch& sketch, Rng& rng);

/// CPU: Ansor's Parallel rule on root stage i: outer spatial loops fused (up to a reduction or
/// annotated loop, a degree above 16 x cores, or a loop with stages computed at it), the fused
/// loop parallel; false when a step fails.
bool parallelize(sched::State& s, int i, const target::Target& hw);

/// CPU: Ansor's Vectorization rule on stage i: innermost spatial loops fused while their
/// product stays <= maxLanes, the result vectorized; false when a step fails.
bool vectorize(sched::State& s, int i, int64_t maxLanes);

/// CPU: the axis along which root stage i reads a layout stage inlined into it (ir::kLayoutTag)
/// when that is not its own innermost axis — a channels-last conv's [N, H, W, K] result read
/// back as NCHW by the fused epilogue (K); -1 when it reads none.
int transposedReadAxis(const sched::State& s, int i);

/// CPU: that read axis (readAxis, from transposedReadAxis) and stage i's innermost axis split
/// into blocks of readBlock and rowBlock, ordered [..., read outer, ..., row outer, read inner,
/// row inner] (a block transposes in cache); nothing when either block is 1 or readAxis < 0;
/// false when a step fails.
bool tileTransposedRead(sched::State& s, int i, int readAxis, int64_t readBlock, int64_t rowBlock);

/// GPU: Ansor's cooperative fetching of every shared stage (its spatial loops fused, split by
/// the block's thread count, the inner part bound to threadIdx.x); false when a step fails.
bool fetchSharedCooperatively(sched::State& s);

/// GPU: the state's steps without its cooperative fetching (the steps that only follow the tile
/// sizes: a mutation changes those, then fetchSharedCooperatively derives them anew).
std::vector<sched::Step> withoutCooperativeFetch(const sched::State& s);

/// The column block of a packed weight (frontend::kWeightBlock) that spatial axis `axis` of op
/// indexes: B where a read's last index is `x % B` with x that axis's variable; 0 for none.
/// The innermost tile of such an axis must be B (any other length splits a vector across
/// blocks and gathers its lanes): the heuristic, annotate and the tile-size mutation keep it.
int64_t packedBlock(const ir::OperationNode& op, int axis);

/// The packedBlock of the stage axis that split step sp tiles, in state s before the step (a
/// split names its loop by its position at that time); 0 for none or a non-root loop.
int64_t splitBlock(const sched::State& s, const sched::SplitStep& sp);

/// Whether any op of dag has an axis with a packedBlock (the search checks blocks only then).
bool hasPackedBlock(const ir::ComputeDAG& dag);

/// Random factorization of `extent` into `parts` factors (outermost first) whose product is
/// extent, the innermost at most maxInnermost.
std::vector<int64_t> randomFactorization(int64_t extent, int parts, int64_t maxInnermost, Rng& rng);

} // namespace wm::search
