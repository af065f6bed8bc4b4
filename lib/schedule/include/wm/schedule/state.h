// The loop state of a schedule (STYLE.md 3): one stage per op, each with its iterators, how
// they derive from the op's axes (split/fuse relations), its compute location and its memory
// scope. The search edits states; lowering turns one into a loop nest. A State is cheap to copy
// (stages are shared until one is modified) and records the step list that built it, so that
// replaying those steps on the initial state gives the same state.
//
// Iterators are identified inside a stage by an id that never changes (ids [0, numRoot) are
// the op's spatial axes, then its reduction axes); `leaves` lists the current loops, outermost
// first. Steps refer to iterators by their leaf position at the time of the step, as Ansor's do.
#pragma once

#include <wm/ir/compute_dag.h>
#include <wm/schedule/step_types.h>

#include <memory>
#include <string>
#include <vector>

namespace wm::sched {

enum class IterKind : uint8_t { Spatial, Reduce };
enum class ComputeLoc : uint8_t { Root, Inlined, At };
const char* computeLocName(ComputeLoc l);

struct Iterator {
  std::string name;
  int64_t extent = 0; ///< 0: unknown (a sketch's split length is left open)
  IterKind kind = IterKind::Spatial;
  Annotation annotation = Annotation::None;
  int64_t autoUnrollMaxStep = -1; ///< pragma on this loop; -1: none
};

/// How iterators derive from others. Split: one parent, children outermost first, the
/// parent's value is the mixed-radix number of the children (guarded when the children
/// cover more than the parent's extent). Fuse: parents outermost first, one child.
struct IterRelation {
  enum class Kind : uint8_t { Split, Fuse };
  Kind kind = Kind::Split;
  std::vector<int> parents;
  std::vector<int> children;
  std::vector<int64_t> lengths; ///< split: the step's lengths (0 unknown)
  bool innerToOuter = true;     ///< split: lengths are the inner parts (else the outer parts)
};

/// How a stage came about: from an op of the DAG, or made by a step.
enum class StageOrigin : uint8_t { Op, CacheRead, CacheWrite, Rfactor };

struct StageAlign {
  int axis = 0;
  int64_t factor = 0, offset = 0;
};

struct StageNode {
  ir::Tensor op;
  std::vector<Iterator> iters;
  int numRoot = 0;
  int numSpatialRoot = 0;
  std::vector<int> leaves;
  std::vector<IterRelation> relations;
  ComputeLoc loc = ComputeLoc::Root;
  int attachStage = -1; ///< loc == At: the stage computed around this one
  int attachIter = -1;  ///< loc == At: iterator id in that stage
  ir::MemScope scope = ir::MemScope::Global;
  std::vector<StageAlign> aligns;
  StageOrigin origin = StageOrigin::Op; ///< CacheWrite: the stage computing into the cache

  bool isPlaceholder() const { return op->isPlaceholder(); }
  const Iterator& leaf(int pos) const { return iters.at(leaves.at(pos)); }
  int numLeaves() const { return static_cast<int>(leaves.size()); }
  int leafPosition(int iterId) const;
  /// Any split, fuse, reorder, annotation or pragma applied.
  bool transformed() const;
  /// Relations or annotations touch a spatial iterator.
  bool spatialTransformed() const;
};

/// A fresh, untransformed stage for op (root extents from its shape and reduction).
StageNode makeStage(const ir::Tensor& op);

class State {
public:
  State() = default;
  /// The initial state of a DAG: one root stage per op, loops in axis order.
  explicit State(const ir::ComputeDAG& dag);

  const ir::ComputeDAG& dag() const { return *dag_; }
  int numStages() const { return static_cast<int>(stages_.size()); }
  const StageNode& stage(int i) const { return *stages_.at(i); }
  /// The stage, copied first if another state shares it.
  StageNode& mutableStage(int i);
  /// Inserts a stage before position pos and renumbers attach references.
  void insertStage(int pos, StageNode s);
  /// Stage computing op, or -1.
  int stageOf(const ir::OperationNode* op) const;
  /// Stages whose op reads stage i's op, in stage order.
  std::vector<int> consumers(int i) const;
  /// Consumers with inlined ones replaced by their own consumers.
  std::vector<int> effectiveConsumers(int i) const;
  bool isOutput(int i) const { return consumers(i).empty() && !stage(i).isPlaceholder(); }
  /// Every iterator extent known (no open split lengths).
  bool concrete() const;

  const std::vector<Step>& steps() const { return steps_; }
  void pushStep(Step s) { steps_.push_back(std::move(s)); }

  /// Readable loop structure (one line a loop), like Ansor's state printer.
  std::string toString() const;

private:
  std::shared_ptr<const ir::ComputeDAG> dag_;
  std::vector<std::shared_ptr<StageNode>> stages_;
  std::vector<Step> steps_;
};

} // namespace wm::sched
