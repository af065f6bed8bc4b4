// The ONNX op table: one converter per op type, in one ordered list (makeOpDefs below). The
// converters live by op family in convert_elementwise.cpp, convert_nn.cpp, convert_reduce.cpp
// and convert_shape.cpp; they are thin adapters — attribute checks, ONNX's padding and axis
// conventions — over the operator library (lib/frontend/ops), which the libtorch oracle checks,
// and build tensor expressions directly only for ops the library does not have. Semantics
// follow the ONNX operator specification for opsets 11-17.
//
// How to add an ONNX op: docs/contributing.md ("An ONNX op").
#include "convert.h"

#include "convert_ops.h"

#include <wm/frontend/model.h>
#include <wm/frontend/ops.h>
#include <wm/support/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace wm::frontend {

using namespace wm::ir;

const char* opClassName(OpClass c) {
  switch (c) {
  case OpClass::Elementwise: return "elementwise";
  case OpClass::Injective: return "injective";
  case OpClass::View: return "view";
  case OpClass::Reduce: return "reduce";
  case OpClass::Anchor: return "anchor";
  case OpClass::Source: return "source";
  }
  return "?";
}

int64_t saturateInt(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

ConvertContext::ConvertContext(const Node& n, int o, std::vector<ConvertInput> inputs)
    : node(n), opset(o), in(std::move(inputs)) {}

const Tensor& ConvertContext::x(size_t i) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is required");
  if (!in[i].tensor)
    fail("input " + std::to_string(i) + " is empty; empty tensors are not supported");
  return *in[i].tensor;
}

const NDArray& ConvertContext::constant(size_t i, const char* what) const {
  if (!has(i)) fail(std::string("input '") + what + "' is required");
  if (!in[i].constant)
    fail(std::string("input '") + what +
         "' must be a constant (an initializer or computable from "
         "constants and static shapes)");
  return *in[i].constant;
}

std::vector<int64_t> ConvertContext::constInts(size_t i, const char* what) const {
  const NDArray& a = constant(i, what);
  std::vector<int64_t> r;
  for (double v : a.values()) r.push_back(saturateInt(v));
  return r;
}

void ConvertContext::fail(const std::string& msg) const {
  WM_USER_ERROR() << "node '" << node.name << "' (" << node.op << ", opset " << opset
                  << "): " << msg;
}

namespace {
const Attribute* findAttr(const Node& n, const std::string& name) {
  auto it = n.attrs.find(name);
  return it == n.attrs.end() ? nullptr : &it->second;
}
} // namespace

int64_t ConvertContext::attrInt(const std::string& n, int64_t def) const {
  const Attribute* a = findAttr(node, n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Int) fail("attribute '" + n + "' must be an int");
  return a->i;
}
double ConvertContext::attrFloat(const std::string& n, double def) const {
  const Attribute* a = findAttr(node, n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Float) fail("attribute '" + n + "' must be a float");
  return a->f;
}
std::string ConvertContext::attrString(const std::string& n, const std::string& def) const {
  const Attribute* a = findAttr(node, n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::String) fail("attribute '" + n + "' must be a string");
  return a->s;
}
std::vector<int64_t> ConvertContext::attrInts(const std::string& n,
                                              const std::vector<int64_t>& def) const {
  const Attribute* a = findAttr(node, n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Ints) fail("attribute '" + n + "' must be a list of ints");
  return a->ints;
}
std::string ConvertContext::name(const std::string& suffix) const {
  return suffix.empty() ? node.name : node.name + "." + suffix;
}

namespace {

using namespace conv;

std::vector<OpDef> makeOpDefs() {
  using C = OpClass;
  const std::vector<std::string> none;
  auto pool = [](bool isMax) {
    return [isMax](ConvertContext& c) { return convertPool(c, isMax); };
  };
  auto gpool = [](bool isMax) {
    return [isMax](ConvertContext& c) { return convertGlobalPool(c, isMax); };
  };
  return {
      {"Conv",
       C::Anchor,
       {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
       convertConv},
      {"ConvTranspose",
       C::Anchor,
       {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads",
        "strides"},
       convertConvTranspose},
      {"Gemm", C::Anchor, {"alpha", "beta", "transA", "transB"}, convertGemm},
      {"MatMul", C::Anchor, none, convertMatMul},
      {"BatchNormalization",
       C::Elementwise,
       {"epsilon", "momentum", "training_mode"},
       convertBatchNorm},
      {"Relu", C::Elementwise, none, convertRelu},
      {"Clip", C::Elementwise, none, convertClip},
      {"Sigmoid", C::Elementwise, none, convertSigmoid},
      {"Tanh", C::Elementwise, none, convertTanh},
      {"Erf", C::Elementwise, none, unaryFn("erf", [](Expr v) { return ir::erf(v); })},
      {"HardSigmoid",
       C::Elementwise,
       {"alpha", "beta"},
       [](ConvertContext& c) {
         double a = c.attrFloat("alpha", 0.2), b = c.attrFloat("beta", 0.5);
         return unaryFn("hard_sigmoid", [a, b](Expr v) {
           return max(constLike(v, 0), min(constLike(v, 1), v * a + b));
         })(c);
       }},
      {"HardSwish", C::Elementwise, none,
       unaryFn("hard_swish",
               [](Expr v) {
                 return v * max(constLike(v, 0), min(constLike(v, 1), v * (1.0 / 6.0) + 0.5));
               })},
      {"Add", C::Elementwise, none, binaryFn("add", BinaryOp::Add)},
      {"Sub", C::Elementwise, none, binaryFn("sub", BinaryOp::Sub)},
      {"Mul", C::Elementwise, none, binaryFn("mul", BinaryOp::Mul)},
      {"Div", C::Elementwise, none, binaryFn("div", BinaryOp::Div)},
      {"Pow", C::Elementwise, none, convertPow},
      {"Sqrt", C::Elementwise, none, unaryFn("sqrt", [](Expr v) { return ir::sqrt(v); })},
      {"Reciprocal", C::Elementwise, none,
       unaryFn("reciprocal", [](Expr v) { return constLike(v, 1) / v; })},
      {"Neg", C::Elementwise, none,
       unaryFn(
           "neg", [](Expr v) { return constLike(v, 0) - v; }, false)},
      {"Abs", C::Elementwise, none, unaryFn("abs", [](Expr v) { return ir::abs(v); })},
      {"Exp", C::Elementwise, none, unaryFn("exp", [](Expr v) { return ir::exp(v); })},
      {"Log", C::Elementwise, none, unaryFn("log", [](Expr v) { return ir::log(v); })},
      {"Where", C::Elementwise, none, convertWhere, true},
      {"Equal", C::Elementwise, none, compareFn("equal", CompareOp::EQ), true},
      {"Greater", C::Elementwise, none, compareFn("greater", CompareOp::GT)},
      {"GreaterOrEqual", C::Elementwise, none, compareFn("greater_equal", CompareOp::GE)},
      {"Less", C::Elementwise, none, compareFn("less", CompareOp::LT)},
      {"LessOrEqual", C::Elementwise, none, compareFn("less_equal", CompareOp::LE)},
      {"Cast", C::Elementwise, {"to"}, convertCast, true},
      {"ReduceMean", C::Reduce, {"axes", "keepdims"}, reduceFn(ReduceKind::Sum, true, false)},
      {"ReduceSum",
       C::Reduce,
       {"axes", "keepdims", "noop_with_empty_axes"},
       reduceFn(ReduceKind::Sum, false, true)},
      {"ReduceMax", C::Reduce, {"axes", "keepdims"}, reduceFn(ReduceKind::Max, false, false)},
      {"ReduceMin", C::Reduce, {"axes", "keepdims"}, reduceFn(ReduceKind::Min, false, false)},
      {"LayerNormalization", C::Reduce, {"axis", "epsilon", "stash_type"}, convertLayerNorm},
      {"Softmax", C::Reduce, {"axis"}, convertSoftmax},
      {"MaxPool",
       C::Reduce,
       {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
       pool(true)},
      {"AveragePool",
       C::Reduce,
       {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"},
       pool(false)},
      {"GlobalAveragePool", C::Reduce, none, gpool(false)},
      {"GlobalMaxPool", C::Reduce, none, gpool(true)},
      {"Pad", C::Injective, {"mode"}, convertPad, true},
      {"Transpose", C::Injective, {"perm"}, convertTranspose, true},
      {"Concat", C::Injective, {"axis"}, convertConcat, true},
      {"Split", C::Injective, {"axis", "split"}, convertSplit, true},
      {"Slice", C::Injective, none, convertSlice, true},
      {"Expand", C::Injective, none, convertExpand, true},
      {"Gather", C::Injective, {"axis"}, convertGather, true},
      {"Flatten", C::View, {"axis"}, convertFlatten, true},
      {"Reshape", C::View, {"allowzero"}, convertReshape, true},
      {"Squeeze", C::View, {"axes"}, convertSqueeze, true},
      {"Unsqueeze", C::View, {"axes"}, convertUnsqueeze, true},
      {"Identity", C::View, none, convertIdentity, true},
      {"Dropout", C::View, {"ratio", "seed"}, convertDropout},
      {"Constant",
       C::Source,
       {"value", "value_float", "value_floats", "value_int", "value_ints"},
       noConverter},
      {"Shape", C::Source, {"start", "end"}, noConverter, true},
      {"ConstantOfShape", C::Source, {"value"}, convertConstantOfShape, true},
  };
}

} // namespace

Tensor reshapeTensor(const Tensor& x, const Shape& shape, const std::string& name) {
  const Shape& in = x->shape;
  return compute(name, "reshape", shape, [&](const std::vector<Var>& ax) {
    // flat index of the output, then unflattened into the input's shape
    Expr flat = intImm(0);
    for (size_t d = 0; d < shape.size(); ++d)
      flat = d == 0 ? Expr(ax[d]) : flat * static_cast<double>(shape[d]) + Expr(ax[d]);
    if (in == shape) return read(x, all(ax));
    std::vector<Expr> idx(in.size());
    int64_t inner = 1;
    for (size_t d = in.size(); d-- > 0;) {
      Expr q = inner == 1 ? flat : flat / intImm(inner);
      idx[d] = d == 0 ? q : q % intImm(in[d]);
      inner *= in[d];
    }
    return read(x, idx);
  });
}

const std::vector<OpDef>& opDefs() {
  static const std::vector<OpDef> defs = makeOpDefs();
  return defs;
}

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> ops;
  for (auto& d : opDefs()) ops.push_back(d.op);
  return ops;
}

const OpDef* findOpDef(const std::string& op) {
  for (auto& d : opDefs())
    if (d.op == op) return &d;
  return nullptr;
}

std::vector<Tensor> convertNode(ConvertContext& c) {
  if (!c.node.domain.empty() && c.node.domain != "ai.onnx")
    c.fail("domain '" + c.node.domain + "' is not supported");
  const OpDef* def = findOpDef(c.node.op);
  if (!def) c.fail("op " + c.node.op + " is not supported");
  for (auto& [name, a] : c.node.attrs)
    if (std::find(def->attrs.begin(), def->attrs.end(), name) == def->attrs.end())
      c.fail("attribute '" + name + "' is not supported");
  if (!def->boolData)
    for (size_t i = 0; i < c.in.size(); ++i)
      if (c.has(i) && c.in[i].dtype == ir::DType::Bool)
        c.fail("input " + std::to_string(i) + " is bool; " + c.node.op + " takes numbers");
  auto outs = def->convert(c);
  for (auto& t : outs)
    for (int64_t d : t->shape)
      if (d <= 0) c.fail("empty outputs are not supported");
  return outs;
}

} // namespace wm::frontend
