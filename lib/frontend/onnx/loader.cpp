// ONNX ModelProto -> frontend::Graph: parse, check (ONNX's checker plus our own topological
// check, which names the node), shape inference, initializers (raw and typed data).
#include <wm/frontend/graph.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace wm::frontend {

namespace {

const char* onnxTypeName(int t) {
  switch (t) {
  case onnx::TensorProto::FLOAT: return "float32";
  case onnx::TensorProto::UINT8: return "uint8";
  case onnx::TensorProto::INT8: return "int8";
  case onnx::TensorProto::UINT16: return "uint16";
  case onnx::TensorProto::INT16: return "int16";
  case onnx::TensorProto::INT32: return "int32";
  case onnx::TensorProto::INT64: return "int64";
  case onnx::TensorProto::STRING: return "string";
  case onnx::TensorProto::BOOL: return "bool";
  case onnx::TensorProto::FLOAT16: return "float16";
  case onnx::TensorProto::DOUBLE: return "float64";
  case onnx::TensorProto::UINT32: return "uint32";
  case onnx::TensorProto::UINT64: return "uint64";
  case onnx::TensorProto::BFLOAT16: return "bfloat16";
  default: return "an unknown type";
  }
}

/// Our element type for an ONNX one; false when we do not support it.
bool dtypeOf(int t, ir::DType* out) {
  switch (t) {
  case onnx::TensorProto::FLOAT: *out = ir::DType::F32; return true;
  case onnx::TensorProto::INT32: *out = ir::DType::I32; return true;
  case onnx::TensorProto::INT64: *out = ir::DType::I64; return true;
  case onnx::TensorProto::BOOL: *out = ir::DType::Bool; return true;
  default: return false;
  }
}

ir::DType requireDtype(int t, const std::string& what) {
  ir::DType d;
  if (!dtypeOf(t, &d))
    WM_USER_ERROR() << what << ": element type " << onnxTypeName(t)
                    << " is not supported (float32, int32, int64 and bool are)";
  return d;
}

template <typename T>
void fromRaw(const std::string& raw, int64_t n, ir::NDArray* a, const std::string& what) {
  if (static_cast<int64_t>(raw.size()) != n * static_cast<int64_t>(sizeof(T)))
    WM_USER_ERROR() << what << ": raw data holds " << raw.size() << " bytes, the shape needs "
                    << n * static_cast<int64_t>(sizeof(T));
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    a->set(i, static_cast<double>(v));
  }
}

template <typename List>
void fromTyped(const List& list, int64_t n, ir::NDArray* a, const std::string& what) {
  if (list.size() != n)
    WM_USER_ERROR() << what << ": holds " << list.size() << " values, the shape needs " << n;
  for (int64_t i = 0; i < n; ++i) a->set(i, static_cast<double>(list.Get(static_cast<int>(i))));
}

ir::NDArray tensorFromProto(const onnx::TensorProto& t, const std::string& what) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    WM_USER_ERROR() << what << ": tensors with external data are not supported";
  ir::DType dt = requireDtype(t.data_type(), what);
  ir::Shape shape(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) WM_USER_ERROR() << what << ": negative dimension " << d;
    if (!checkedMul(n, d, &n) || n > kMaxTensorElements)
      WM_USER_ERROR() << what << ": its shape has more elements than any memory holds";
  }
  // The values must be present before anything is allocated for them.
  const bool raw = t.has_raw_data();
  int64_t present = 0;
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    present = raw ? static_cast<int64_t>(t.raw_data().size() / 4) : t.float_data_size();
    break;
  case onnx::TensorProto::INT32:
    present = raw ? static_cast<int64_t>(t.raw_data().size() / 4) : t.int32_data_size();
    break;
  case onnx::TensorProto::BOOL:
    present = raw ? static_cast<int64_t>(t.raw_data().size()) : t.int32_data_size();
    break;
  case onnx::TensorProto::INT64:
    present = raw ? static_cast<int64_t>(t.raw_data().size() / 8) : t.int64_data_size();
    break;
  }
  if (present < n)
    WM_USER_ERROR() << what << ": holds " << present << " values, the shape needs " << n;
  ir::NDArray a(dt, shape);
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    raw ? fromRaw<float>(t.raw_data(), n, &a, what) : fromTyped(t.float_data(), n, &a, what);
    break;
  case onnx::TensorProto::INT32:
    raw ? fromRaw<int32_t>(t.raw_data(), n, &a, what) : fromTyped(t.int32_data(), n, &a, what);
    break;
  case onnx::TensorProto::BOOL:
    raw ? fromRaw<uint8_t>(t.raw_data(), n, &a, what) : fromTyped(t.int32_data(), n, &a, what);
    break;
  case onnx::TensorProto::INT64:
    // int64 values beyond 2^53 (INT64_MAX as "to the end" in Slice) are kept approximately;
    // every reader of integer constants saturates them.
    raw ? fromRaw<int64_t>(t.raw_data(), n, &a, what) : fromTyped(t.int64_data(), n, &a, what);
    break;
  }
  return a;
}

ValueInfo valueInfoOf(const onnx::ValueInfoProto& v) {
  ValueInfo info;
  if (!v.has_type() || !v.type().has_tensor_type()) return info;
  const auto& tt = v.type().tensor_type();
  ir::DType d;
  if (tt.has_elem_type() && dtypeOf(tt.elem_type(), &d)) {
    info.dtype = d;
    info.typeKnown = true;
  }
  if (tt.has_shape()) {
    info.shapeKnown = true;
    for (const auto& dim : tt.shape().dim())
      info.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  }
  return info;
}

Attribute attributeOf(const onnx::AttributeProto& a, const std::string& what) {
  Attribute r;
  r.typeName = onnx::AttributeProto_AttributeType_Name(a.type());
  switch (a.type()) {
  case onnx::AttributeProto::FLOAT:
    r.kind = Attribute::Kind::Float;
    r.f = a.f();
    break;
  case onnx::AttributeProto::INT:
    r.kind = Attribute::Kind::Int;
    r.i = a.i();
    break;
  case onnx::AttributeProto::STRING:
    r.kind = Attribute::Kind::String;
    r.s = a.s();
    break;
  case onnx::AttributeProto::TENSOR:
    r.kind = Attribute::Kind::Tensor;
    r.tensor = tensorFromProto(a.t(), what + " attribute '" + a.name() + "'");
    break;
  case onnx::AttributeProto::FLOATS:
    r.kind = Attribute::Kind::Floats;
    r.floats.assign(a.floats().begin(), a.floats().end());
    break;
  case onnx::AttributeProto::INTS:
    r.kind = Attribute::Kind::Ints;
    r.ints.assign(a.ints().begin(), a.ints().end());
    break;
  case onnx::AttributeProto::STRINGS:
    r.kind = Attribute::Kind::Strings;
    r.strings.assign(a.strings().begin(), a.strings().end());
    break;
  default: r.kind = Attribute::Kind::Other; break;
  }
  return r;
}

Graph graphOf(onnx::ModelProto& model, const std::string& name) {
  Graph g;
  g.path = name;
  for (const auto& imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      g.opset = static_cast<int>(imp.version());
  if (g.opset == 0) WM_USER_ERROR() << name << ": the model imports no ai.onnx opset";
  if (g.opset < kMinOpset || g.opset > kMaxOpset)
    WM_USER_ERROR() << name << ": opset " << g.opset << " is not supported (opsets " << kMinOpset
                    << "-" << kMaxOpset << " are)";
  if (!model.has_graph()) WM_USER_ERROR() << name << ": the model has no graph";
  const auto& gp = model.graph();

  // Our own SSA/topological check first: it names the node and the value, and tells a cycle
  // from a missing initializer.
  std::map<std::string, int> producer;
  for (int i = 0; i < gp.node_size(); ++i)
    for (const auto& out : gp.node(i).output())
      if (!out.empty()) producer.emplace(out, i);
  auto nodeLabel = [&](int i) {
    const auto& n = gp.node(i);
    return "'" + (n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name()) + "' (" +
           n.op_type() + ")";
  };
  std::set<std::string> defined;
  for (const auto& init : gp.initializer()) defined.insert(init.name());
  for (const auto& in : gp.input()) defined.insert(in.name());
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& n = gp.node(i);
    std::string nodeName = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
    for (const auto& in : n.input()) {
      if (in.empty() || defined.count(in)) continue;
      auto p = producer.find(in);
      if (p == producer.end())
        WM_USER_ERROR()
            << name << ": node '" << nodeName << "' (" << n.op_type() << ") reads '" << in
            << "', which no graph input, initializer or node defines (a missing initializer?)";
      // defined later: follow producers back from that node; reaching node i again is a cycle
      std::vector<int> path{p->second};
      std::set<int> seen{p->second};
      bool cycle = false;
      for (size_t k = 0; k < path.size() && !cycle; ++k)
        for (const auto& pin : gp.node(path[k]).input()) {
          auto q = producer.find(pin);
          if (q == producer.end()) continue;
          if (q->second == i) {
            cycle = true;
            break;
          }
          if (seen.insert(q->second).second) path.push_back(q->second);
        }
      if (cycle)
        WM_USER_ERROR() << name << ": the graph has a cycle: node '" << nodeName << "' ("
                        << n.op_type() << ") reads '" << in << "' from node "
                        << nodeLabel(p->second) << ", which depends on it";
      WM_USER_ERROR() << name << ": nodes are not topologically sorted: node '" << nodeName << "' ("
                      << n.op_type() << ") reads '" << in << "' before node "
                      << nodeLabel(p->second) << " writes it";
    }
    for (const auto& out : n.output()) {
      if (out.empty()) continue;
      if (!defined.insert(out).second)
        WM_USER_ERROR() << name << ": node '" << nodeName << "' (" << n.op_type()
                        << ") redefines value '" << out << "'";
    }
  }
  for (const auto& out : gp.output())
    if (!defined.count(out.name()))
      WM_USER_ERROR() << name << ": graph output '" << out.name() << "' is never defined";

  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    WM_USER_ERROR() << name << ": the ONNX checker rejects the model: " << e.what();
  }
  try {
    onnx::ShapeInferenceOptions opts(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    WM_USER_ERROR() << name << ": shape inference fails: " << e.what();
  }

  for (const auto& init : gp.initializer())
    g.initializers.emplace(init.name(),
                           tensorFromProto(init, name + ": initializer '" + init.name() + "'"));
  auto addInfo = [&](const onnx::ValueInfoProto& v) {
    ValueInfo info = valueInfoOf(v);
    auto it = g.values.find(v.name());
    if (it == g.values.end() || (!it->second.shapeKnown && info.shapeKnown))
      g.values[v.name()] = info;
  };
  for (const auto& v : gp.input()) addInfo(v);
  for (const auto& v : gp.output()) addInfo(v);
  for (const auto& v : gp.value_info()) addInfo(v);
  for (const auto& v : gp.input()) {
    if (g.initializers.count(v.name())) continue;
    if (v.has_type() && v.type().has_tensor_type())
      requireDtype(v.type().tensor_type().elem_type(), name + ": graph input '" + v.name() + "'");
    else
      WM_USER_ERROR() << name << ": graph input '" << v.name() << "' is not a tensor";
    g.inputs.push_back(v.name());
  }
  for (const auto& v : gp.output()) g.outputs.push_back(v.name());

  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& n = gp.node(i);
    Node node;
    node.op = n.op_type();
    node.domain = n.domain();
    node.name = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    std::string what = name + ": node '" + node.name + "' (" + node.op + ")";
    for (const auto& a : n.attribute()) node.attrs.emplace(a.name(), attributeOf(a, what));
    g.nodes.push_back(std::move(node));
  }
  return g;
}

} // namespace

Graph loadOnnxFromBytes(const std::string& bytes, const std::string& name) {
  onnx::ModelProto model;
  if (bytes.empty()) WM_USER_ERROR() << name << ": empty file, not an ONNX model";
  if (!model.ParseFromString(bytes))
    WM_USER_ERROR() << name << ": not an ONNX model (the protobuf does not parse; truncated or "
                    << "another format)";
  if (!model.has_graph() || model.opset_import_size() == 0)
    WM_USER_ERROR() << name << ": not an ONNX model (no graph or no opset import)";
  return graphOf(model, name);
}

Graph loadOnnx(const std::string& path) {
  requireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) WM_USER_ERROR() << path << ": cannot open the file";
  std::stringstream ss;
  ss << in.rdbuf();
  return loadOnnxFromBytes(ss.str(), path);
}

void bindInputAsConstant(Graph& g, const std::string& name, ir::NDArray value) {
  auto it = std::find(g.inputs.begin(), g.inputs.end(), name);
  if (it == g.inputs.end()) WM_USER_ERROR() << g.path << ": '" << name << "' is not a graph input";
  auto v = g.values.find(name);
  if (v != g.values.end() && v->second.typeKnown && v->second.dtype != value.dtype())
    WM_USER_ERROR() << g.path << ": input '" << name << "' is " << ir::dtypeName(v->second.dtype)
                    << ", the data " << ir::dtypeName(value.dtype());
  g.inputs.erase(it);
  if (v != g.values.end()) {
    v->second.shape = value.shape();
    v->second.shapeKnown = true;
  }
  g.initializers[name] = std::move(value);
}

ir::NDArray loadTensorProto(const std::string& path, std::string* name) {
  requireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) WM_USER_ERROR() << path << ": cannot open the file";
  std::stringstream ss;
  ss << in.rdbuf();
  onnx::TensorProto t;
  if (!t.ParseFromString(ss.str())) WM_USER_ERROR() << path << ": not a serialized ONNX tensor";
  if (name) *name = t.name();
  return tensorFromProto(t, path);
}

} // namespace wm::frontend
