// From a loaded ONNX graph to what wmtune tunes and runs:
//   buildProgram: constant folding (initializers, Constant, Shape/Gather/Concat chains and any
//     node whose inputs are all constant), static shape propagation through the converters,
//     batch norm folded into a preceding conv, views (reshape, flatten, squeeze, identity ...)
//     turned into aliases of their input's bytes;
//   planModel: fusion into single-output groups (anchors take element-wise consumers,
//     reductions and injective ops take element-wise/injective producers), one ComputeDAG per
//     group, identical groups deduplicated into one task with a weight.
#pragma once

#include <wm/frontend/graph.h>
#include <wm/ir/compute_dag.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace wm::frontend {

struct PValue {
  std::string name;
  ir::DType dtype = ir::DType::F32;
  ir::Shape shape;
  std::optional<ir::NDArray> constant;
  int producer = -1; ///< index into Program::nodes
  int aliasOf = -1;  ///< a view: the value whose bytes it shares (never itself an alias)
  bool isInput = false, isOutput = false;
  int64_t numElements() const;
};

struct PNode {
  Node node;               ///< the ONNX node (op, attributes)
  int outputIndex = 0;     ///< which of the node's outputs this computes
  std::vector<int> inputs; ///< value ids; -1 for a missing optional input
  int output = -1;
};

struct Program {
  std::string path;
  int opset = 0;
  std::vector<PValue> values;
  std::vector<PNode> nodes; ///< topological order, one output each
  std::vector<int> inputs, outputs;
  int numOnnxNodes = 0, numFolded = 0, numViews = 0, numBatchNormsFolded = 0;
  int numWeightsTransposed = 0;       ///< Gemm weights (transB) stored transposed
  int numConvWeightsChannelsLast = 0; ///< Conv weights stored [C, R..., K]
  int numConvWeightsPadded = 0;       ///< pointwise Conv weights stored [K, C + pad, 1...]
  int numWeightsPacked = 0;           ///< MatMul/Gemm weights stored [N / block, K, block]

  /// The value whose bytes v lives in (itself unless v is a view).
  int root(int v) const { return values[v].aliasOf >= 0 ? values[v].aliasOf : v; }
};

Program buildProgram(const Graph& g);

/// Whether buildProgram stores a Conv's constant weight channels-last (group=1 only): K output
/// channels a multiple of 16 (the widest vector, 16 fp32 lanes, so also whole narrower ones)
/// and at least 256 multiply-adds per output (`reduction` = C·R...: the result's read back to
/// NCHW is a pass over the output, too dear for a 1x1 conv over few channels), unless the
/// output's last spatial axis (extent `width`, input `stride`) already gives whole 16-lane
/// vectors at stride 1.
bool convWantsChannelsLast(int64_t K, int64_t reduction, int64_t width, int64_t stride);

/// The column block of a packed MatMul/Gemm weight: B [K, N] is stored [N / 16, K, 16], so
/// that a kernel whose register tile is 16 columns wide reads its weights as one contiguous
/// stream. Row-major B gave each of the tile's K rows its own line N floats apart: with N a
/// multiple of 1024 every one of them falls into the same L1 set (GEMM 1024 and BERT's
/// 3072-wide MLP ran at 110-130 GFLOP/s where a 768-wide one ran at 150). The heuristic
/// schedule makes the register tile's columns exactly one block (other lengths gather).
constexpr int64_t kWeightBlock = 16;
/// A pointwise Conv weight whose rows hold a multiple of kWeightRowAlias floats (2 KB) gets
/// kWeightRowPad unused floats (a cache line) after each row (Node::weightRowPad).
constexpr int64_t kWeightRowAlias = 512;
constexpr int64_t kWeightRowPad = 16;

/// Whether buildProgram packs a constant MatMul/Gemm weight [K, N]: whole blocks of columns,
/// at least two, and a reduction of at least one block.
bool matmulWantsPacked(int64_t K, int64_t N);

/// An integer value that indexes (Gather's indices) and is known only at run time: every
/// element must lie in [lo, hi] (ONNX: out-of-range indices are an error). The kernels clamp
/// such indices, so a bad one never reads outside a buffer; the executor checks the values and
/// reports the node.
struct IndexRange {
  int value = -1;
  int64_t lo = 0, hi = 0;
  std::string node;
};
std::vector<IndexRange> indexRanges(const Program& p);

struct FusedGroup {
  std::vector<int> nodes; ///< node indices, topological order; the last computes the output
  int output = -1;
  /// Value ids in the order of the group DAG's placeholders (the kernel's inputs).
  std::vector<int> inputs;
  int task = -1;
  std::string ops; ///< "Conv+Add+Relu"
};

struct ModelTask {
  std::string key;
  ir::ComputeDAG dag;
  int weight = 0; ///< groups that are this task
  std::vector<int> groups;
  std::string ops;
};

struct ModelPlan {
  std::vector<FusedGroup> groups; ///< execution order
  std::vector<ModelTask> tasks;   ///< first-appearance order
};

ModelPlan planModel(const Program& p);

/// Bytes of a value's elements (UserError when the product overflows).
int64_t valueBytes(const PValue& v);

/// Where each value's bytes live while the model runs — the graph executor and exported
/// libraries both follow it: graph inputs and the constants something reads have their own
/// buffers; each group's output takes a slot, reused once the last group reading it has run
/// (graph outputs keep theirs); a view lives in its source's bytes (kind None: see root()).
struct MemoryPlan {
  enum class Kind { None, Input, Constant, Slot };
  std::vector<Kind> kind;         ///< per value
  std::vector<int> slot;          ///< per value: its slot (Kind::Slot), else -1
  std::vector<int64_t> slotBytes; ///< per slot
  int64_t plannedBytes = 0;       ///< sum of slotBytes
  int64_t unplannedBytes = 0;     ///< what one buffer per group output would take
};
MemoryPlan planMemory(const Program& p, const ModelPlan& plan);

/// The DAG of one group; *inputs receives the value id of each placeholder, in DAG order.
ir::ComputeDAG groupDag(const Program& p, const std::vector<int>& nodes, std::vector<int>* inputs);

/// The task DAG named by a workload spec "onnx:<model path>#<task key>" (used by measurement
/// workers; models are loaded once per process).
ir::ComputeDAG onnxTaskDag(const std::string& spec);
/// "onnx:<path>#<key>".
std::string onnxTaskSpec(const std::string& path, const std::string& key);
/// Every ONNX op type the converters accept (the op table of convert.cpp, in its order).
std::vector<std::string> supportedOnnxOps();

/// The DAG of any workload spec: a built-in `op:key=value,...` or an `onnx:` model task
/// (what measurement workers and log readers resolve specs with).
ir::ComputeDAG workloadDag(const std::string& spec);

/// workloadDag for specs read from a log, which is data: an `onnx:` spec resolves only when its
/// model is one of `models` (the files the user named; compared as canonical paths), so a log
/// cannot make wmtune open any other path. UserError otherwise (log readers skip the task).
std::function<ir::ComputeDAG(const std::string&)>
logWorkloadResolver(const std::vector<std::string>& models);

} // namespace wm::frontend
