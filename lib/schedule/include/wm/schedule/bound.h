// Bound inference and iterator arithmetic shared by the loop state and lowering.
//
//  - recomputeExtents: iterator extents from root extents through the split/fuse relations.
//  - rootValues: each root axis as an expression of the leaf loop variables, plus the guards
//    that non-dividing splits need.
//  - inferBound: for every stage computed inside another (compute-at), the region of its
//    output that one iteration of the enclosing loops needs: a base (an expression of the
//    enclosing loop variables) and a constant extent per dimension. Stages are visited from
//    consumers to producers; the attached stage's root extents become the region's extents.
#pragma once

#include <wm/ir/simplify.h>
#include <wm/schedule/state.h>

#include <vector>

namespace wm::sched {

void recomputeExtents(StageNode& st, const std::vector<int64_t>& rootExtents);

struct RootValues {
  std::vector<ir::Expr> values; ///< per root iterator (spatial, then reduce)
  struct Guard {
    ir::Expr cond;
    bool spatial; ///< involves only spatial iterators
  };
  std::vector<Guard> guards;
};
/// vars: one variable per iterator id of the stage (only leaves are read).
RootValues rootValues(const StageNode& st, const std::vector<ir::Var>& vars);

struct StageRegion {
  std::vector<ir::Expr> base;  ///< per output dimension; 0 for root stages
  std::vector<int64_t> extent; ///< per output dimension
  bool full = true;            ///< the region is the whole tensor
};

struct Bounds {
  /// vars[stage][iterId]: the loop variable of each iterator (unique names across stages).
  std::vector<std::vector<ir::Var>> vars;
  std::vector<StageRegion> regions;
  /// Range of every loop variable: [0, extent - 1].
  ir::VarBounds varBounds;
};

/// Updates the root extents (and so all iterator extents) of attached stages in place and
/// returns the regions. Requires extents to be known where regions depend on them; where
/// they are not, the region falls back to the whole tensor.
Bounds inferBound(State& state);

/// Where stage i's buffer lives. Its own scope, except a global stage computed inside a GPU
/// kernel (TVM's rule for buffers without a declared scope): attached inside a threadIdx or
/// vthread loop it is the thread's own (local), inside only blockIdx loops the block's
/// (shared). On CPUs (no thread-bound loops) always the stage's scope.
ir::MemScope effectiveScope(const State& state, int i);

/// The body of stage i's op with reads of inlined stages replaced by their bodies.
ir::Expr inlinedBody(const State& state, int i);

} // namespace wm::sched
