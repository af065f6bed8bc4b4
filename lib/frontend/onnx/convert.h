// ONNX node -> tensor-expression ops: one converter per op type in one ordered table
// (convert.cpp). A converter gets its inputs as tensors (and, where an input is a constant, its
// data), checks the attributes it knows, and returns the node's outputs. The same converter
// serves constant folding (inputs are placeholders of constants), shape propagation and the
// task DAGs of fused groups.
//
// How to add an ONNX op: docs/contributing.md ("An ONNX op").
#pragma once

#include <wm/frontend/graph.h>
#include <wm/ir/tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace wm::frontend {

/// How an op fuses (TVM's op patterns, coarser).
enum class OpClass {
  Elementwise, ///< one output element from the same element of each (broadcast) input
  Injective,   ///< index remapping: transpose, slice, concat, pad, gather, expand
  View,        ///< same bytes, another shape (reshape, flatten, squeeze, identity): no kernel
  Reduce,      ///< reductions, pooling, softmax, layer norm: fuse injective producers too
  Anchor,      ///< conv, matmul, gemm: fuse element-wise consumers
  Source,      ///< Constant, Shape, ConstantOfShape: always folded
};
const char* opClassName(OpClass c);

struct ConvertInput {
  bool present = false;
  std::optional<ir::Tensor> tensor;
  const ir::NDArray* constant = nullptr; ///< data, when the input is a constant
  ir::DType dtype = ir::DType::F32;
  ir::Shape shape;
};

class ConvertContext {
public:
  ConvertContext(const Node& node, int opset, std::vector<ConvertInput> inputs);

  const Node& node;
  const int opset;
  std::vector<ConvertInput> in;

  size_t numInputs() const { return in.size(); }
  bool has(size_t i) const { return i < in.size() && in[i].present; }
  /// Required input i as a tensor.
  const ir::Tensor& x(size_t i) const;
  bool isConstant(size_t i) const { return has(i) && in[i].constant; }
  /// Input i's data; user error when it is not a constant (`what` names the input).
  const ir::NDArray& constant(size_t i, const char* what) const;
  /// Integer data of a constant input (saturated to int64).
  std::vector<int64_t> constInts(size_t i, const char* what) const;

  bool hasAttr(const std::string& n) const { return node.attrs.count(n) > 0; }
  int64_t attrInt(const std::string& n, int64_t def) const;
  double attrFloat(const std::string& n, double def) const;
  std::string attrString(const std::string& n, const std::string& def) const;
  std::vector<int64_t> attrInts(const std::string& n, const std::vector<int64_t>& def) const;
  /// A unique op name for this node's ops: "<node>.<suffix>".
  std::string name(const std::string& suffix = "") const;
  /// Is output i wanted (present and named)?
  bool wantsOutput(size_t i) const { return i < node.outputs.size() && !node.outputs[i].empty(); }

  /// User error naming the node, its op and the opset.
  [[noreturn]] void fail(const std::string& msg) const;
};

using ConvertFn = std::function<std::vector<ir::Tensor>(ConvertContext&)>;

struct OpDef {
  std::string op;
  OpClass cls;
  std::vector<std::string> attrs; ///< every attribute the converter understands
  ConvertFn convert;
  /// Takes bool data (ops that move or select elements; ONNX's type constraints allow bool
  /// there). Every other op refuses bool inputs: arithmetic takes numbers.
  bool boolData = false;
};

/// The op table (ai.onnx domain), in the order docs list it.
const std::vector<OpDef>& opDefs();
const OpDef* findOpDef(const std::string& op);

/// Converts a node: checks domain, op and attributes, runs the converter. The result has one
/// tensor per node output ("" outputs included, as nullopt-free placeholders of the converter).
std::vector<ir::Tensor> convertNode(ConvertContext& ctx);

/// Reshape as an index remapping (row-major).
ir::Tensor reshapeTensor(const ir::Tensor& x, const ir::Shape& shape, const std::string& name);

/// Saturating double -> int64 (constants beyond 2^63 such as INT64_MAX read back as doubles).
int64_t saturateInt(double v);

} // namespace wm::frontend
