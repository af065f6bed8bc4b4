// The model graph: what the ONNX loader reads, independent of protobuf. Nodes keep their ONNX
// op type and attributes; values carry a type and, where the model gives them, a shape and
// constant data (initializers and Constant nodes). Only lib/frontend/onnx/loader.cpp sees
// the ONNX protobuf classes.
#pragma once

#include <wm/ir/interpreter.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wm::frontend {

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Other };
  Kind kind = Kind::Other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::optional<ir::NDArray> tensor;
  std::string typeName; ///< ONNX's name of the attribute type, for messages
};

struct Node {
  std::string name; ///< the node's name, or "<op>_<index>" when the model leaves it empty
  std::string op;
  std::string domain;
  std::vector<std::string> inputs;  ///< "" marks a missing optional input
  std::vector<std::string> outputs; ///< "" marks an unused optional output
  std::map<std::string, Attribute> attrs;
  /// Conv only, set by buildProgram (never read from a file): input W is stored channels-last,
  /// [C, R..., K] instead of ONNX's [K, C/group, R...] (ops::ConvParams::weightChannelsLast).
  bool weightChannelsLast = false;
  /// MatMul and Gemm only, set by buildProgram: input B ([K, N]) is stored packed in column
  /// blocks of this many, [N / block, K, block] (0: as in the file; see kWeightBlock).
  int64_t weightBlock = 0;
  /// Conv: the weight's rows carry this many unused elements after their C input channels,
  /// [K, C + pad, 1...] (ops::ConvParams::weightRowPad; 0: as in the file).
  int64_t weightRowPad = 0;
};

struct ValueInfo {
  ir::DType dtype = ir::DType::F32;
  bool typeKnown = false;
  /// -1 for a dimension the model leaves symbolic or unknown.
  ir::Shape shape;
  bool shapeKnown = false;
};

struct Graph {
  std::string path;                        ///< the file it came from, for messages
  int opset = 0;                           ///< of the default (ai.onnx) domain
  std::vector<Node> nodes;                 ///< topologically sorted (checked)
  std::map<std::string, ValueInfo> values; ///< declared and inferred types
  std::map<std::string, ir::NDArray> initializers;
  std::vector<std::string> inputs; ///< graph inputs that are not initializers
  std::vector<std::string> outputs;
};

/// Opsets the loader accepts for the default domain. Ops are converted with their semantics in
/// opsets 11-17; a model of an older opset loads when its nodes use the same forms (an op's
/// older form, such as Clip's min/max attributes, is refused by its attribute check).
constexpr int kMinOpset = 1, kMaxOpset = 17;

/// Reads, checks and shape-infers an ONNX model. UserError naming the file (and the node, where
/// there is one) for anything malformed or unsupported in the file format itself.
Graph loadOnnx(const std::string& path);
/// The same from bytes in memory (`name` stands for the file in messages).
Graph loadOnnxFromBytes(const std::string& bytes, const std::string& name);

/// Makes graph input `name` a constant with the given data (the shape specializations of a
/// static compiler: shape, axes and pads given as inputs). UserError if it is no graph input or
/// the data does not match its declared type.
void bindInputAsConstant(Graph& g, const std::string& name, ir::NDArray value);

/// Reads one serialized ONNX TensorProto (the node tests' input_*.pb / output_*.pb files).
ir::NDArray loadTensorProto(const std::string& path, std::string* name = nullptr);

} // namespace wm::frontend
