// ComputeDAG: the operations reachable from a set of outputs, in topological order, with the
// analyses the search needs: who reads whom and how (access analysis), FLOP count, and a
// structural hash that names the workload independently of tensor and axis names.
//
// The order is a depth-first post-order from the outputs, visiting reads in the order they
// appear in each body: deterministic, and independent of names and pointers.
#pragma once

#include <wm/ir/tensor.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace wm::ir {

class ComputeDAG {
public:
  ComputeDAG() = default;
  explicit ComputeDAG(std::vector<Tensor> outputs);

  /// Every op, producers before consumers.
  const std::vector<Tensor>& ops() const { return ops_; }
  size_t size() const { return ops_.size(); }
  const OperationNode& op(int i) const { return *ops_.at(i); }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  /// Placeholders, in topological order.
  std::vector<Tensor> placeholders() const;
  /// Position of op in ops(), or -1.
  int indexOf(const OperationNode* op) const;
  bool isOutput(int i) const;

  /// Ops that op i reads / ops that read op i (each once, in topological order).
  const std::vector<int>& producers(int i) const { return producers_.at(i); }
  const std::vector<int>& consumers(int i) const { return consumers_.at(i); }
  /// Every read of `producer` in the body of op `consumer`: one index list per read.
  const std::vector<std::vector<Expr>>& reads(int consumer, int producer) const;

  // ---- Access analysis (Ansor's definitions; see docs/ANSOR_FACTS in shared) ----
  /// Every read of producer in consumer is, index by index, a constant or axis + constant.
  bool isSimpleAccess(int consumer, int producer) const;
  /// Compute op without reduction whose reads are all simple, use axes in order without
  /// repetition, and whose body has no exp and no select.
  bool isStrictlyInlineable(int i) const;
  /// Ansor's rule: count producers whose reads leave out an output axis of extent > 1;
  /// tile if the count is >= 2, or >= 1 and the op has a reduction.
  bool needsMultiLevelTiling(int i) const;
  /// consumer reads op i element-wise: same shape, i's only consumer, a single simple read
  /// with the axes in order.
  bool isElementwiseMatch(int i, int consumer) const;

  /// Floating-point operations (a multiply-add is 2); index arithmetic is not counted.
  int64_t flops() const;
  int64_t flops(int i) const;

  /// Hash of the structure: op kinds, types, shapes, reductions, bodies with variables
  /// replaced by their axis position and reads by the producer's topological position.
  uint64_t structuralHash() const;
  /// The workload key used in tuning logs: 16 hex digits of structuralHash().
  std::string workloadKey() const;

  /// Multi-line text, one op a line.
  std::string toString() const;

private:
  std::vector<Tensor> outputs_;
  std::vector<Tensor> ops_;
  std::unordered_map<const OperationNode*, int> index_; // lookups only, never iterated
  std::vector<std::vector<int>> producers_, consumers_;
  // reads_[consumer] : producer -> list of index lists
  std::vector<std::vector<std::pair<int, std::vector<std::vector<Expr>>>>> reads_;
};

} // namespace wm::ir
