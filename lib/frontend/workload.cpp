// The table of built-in workloads and the spec parser (see workload.h).
#include <wm/frontend/ops.h>
#include <wm/frontend/workload.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>
#include <wm/support/strings.h>

#include <sstream>

namespace wm {

using ir::ComputeDAG;
using ir::DType;
using ir::Shape;
using ir::Tensor;

const char* paramKindName(ParamKind k) {
  switch (k) {
  case ParamKind::Int: return "int";
  case ParamKind::Float: return "float";
  case ParamKind::Shape: return "shape";
  }
  return "?";
}

int64_t WorkloadArgs::i(const std::string& name) const {
  auto it = ints.find(name);
  WM_CHECK(it != ints.end()) << "workload parameter " << name << " is not an int parameter";
  return it->second;
}
double WorkloadArgs::f(const std::string& name) const {
  auto it = floats.find(name);
  WM_CHECK(it != floats.end()) << "workload parameter " << name << " is not a float parameter";
  return it->second;
}
const Shape& WorkloadArgs::shape(const std::string& name) const {
  auto it = shapes.find(name);
  WM_CHECK(it != shapes.end()) << "workload parameter " << name << " is not a shape parameter";
  return it->second;
}

namespace {

WorkloadParam req(std::string name, std::string help) {
  return {std::move(name), ParamKind::Int, "", std::move(help), 1};
}
WorkloadParam opt(std::string name, std::string def, std::string help, int64_t minValue = 1) {
  return {std::move(name), ParamKind::Int, std::move(def), std::move(help), minValue};
}
WorkloadParam shapeParam(std::string def = "") {
  return {"shape", ParamKind::Shape, std::move(def), "tensor shape, dimensions joined by x", 1};
}
WorkloadParam floatParam(std::string name, std::string def, std::string help) {
  return {std::move(name), ParamKind::Float, std::move(def), std::move(help), 0};
}

Tensor input(const std::string& name, Shape s) {
  return ir::placeholder(name, std::move(s));
}
// Test inputs in [-8, 8], so that clipping at the usual bounds (0, 6) is exercised.
Tensor wideInput(Shape s) {
  return ir::placeholder("data", std::move(s), DType::F32, {-8.0, 8.0});
}

// conv1d/2d/3d share everything but the number of spatial dimensions.
std::vector<WorkloadParam> convParams(size_t dims, bool transposed) {
  std::vector<WorkloadParam> p{opt("N", "1", "batch"), req("C", "input channels")};
  const char* in[] = {"D", "H", "W"};
  const char* ker[] = {"T", "R", "S"};
  if (dims == 1)
    p.push_back(req("L", "input length"));
  else
    for (size_t d = 3 - dims; d < 3; ++d) p.push_back(req(in[d], std::string("input ") + "DHW"[d]));
  p.push_back(req("K", "output channels"));
  if (dims == 1)
    p.push_back(req("R", "kernel length"));
  else
    for (size_t d = 3 - dims; d < 3; ++d)
      p.push_back(req(ker[d], std::string("kernel ") + "DHW"[d]));
  p.push_back(opt("stride", "1", "stride"));
  p.push_back(opt("pad", "0", "zero padding on each side", 0));
  p.push_back(opt("dilation", "1", "dilation"));
  p.push_back(opt("groups", "1", "groups (C for depthwise)"));
  if (transposed) p.push_back(opt("output_padding", "0", "extra output rows", 0));
  return p;
}

struct ConvTensors {
  Tensor data, weight;
  ops::ConvParams params;
};

ConvTensors convInputs(const WorkloadArgs& a, size_t dims, bool transposed) {
  Shape data{a.i("N"), a.i("C")}, weight;
  if (dims == 1) data.push_back(a.i("L"));
  if (dims == 3) data.push_back(a.i("D"));
  if (dims >= 2) {
    data.push_back(a.i("H"));
    data.push_back(a.i("W"));
  }
  int64_t C = a.i("C"), K = a.i("K"), G = a.i("groups");
  if (C % G) WM_USER_ERROR() << "groups=" << G << " does not divide C=" << C;
  if (K % G) WM_USER_ERROR() << "groups=" << G << " does not divide K=" << K;
  weight = transposed ? Shape{C, K / G} : Shape{K, C / G};
  if (dims == 1) weight.push_back(a.i("R"));
  if (dims == 3) weight.push_back(a.i("T"));
  if (dims >= 2) {
    weight.push_back(a.i("R"));
    weight.push_back(a.i("S"));
  }
  return {input("data", data), input("weight", weight),
          ops::ConvParams::uniform(dims, a.i("stride"), a.i("pad"), a.i("dilation"), G)};
}

ComputeDAG buildConv(const WorkloadArgs& a, size_t dims, const char* name) {
  auto t = convInputs(a, dims, false);
  return ComputeDAG({ops::conv(t.data, t.weight, t.params, name)});
}

ComputeDAG buildUnary(const WorkloadArgs& a, Tensor (*f)(const Tensor&, const std::string&),
                      const char* name) {
  return ComputeDAG({f(input("data", a.shape("shape")), name)});
}

ComputeDAG buildBinary(const WorkloadArgs& a, ir::BinaryOp op, const char* name) {
  Tensor x = input("a", a.shape("shape"));
  const Shape& sb = a.shape("shape_b");
  Tensor y = input("b", sb == Shape{0} ? a.shape("shape") : sb);
  return ComputeDAG({ops::binaryOp(x, y, op, name)});
}

std::vector<WorkloadParam> binaryParams() {
  return {shapeParam(), {"shape_b", ParamKind::Shape, "0", "shape of b (broadcast); 0: as a", 0}};
}

std::vector<WorkloadDef> makeDefs() {
  using P = std::vector<WorkloadParam>;
  std::vector<WorkloadDef> defs;
  auto add = [&](std::string name, std::string summary, P params,
                 std::function<ComputeDAG(const WorkloadArgs&)> build, std::string example) {
    defs.push_back({std::move(name), std::move(summary), std::move(params), std::move(build),
                    std::move(example)});
  };

  // ---- matrix products ----
  add(
      "gemm", "C[M,N] = A[M,K] · B[K,N]",
      P{req("M", "rows"), req("N", "columns"), req("K", "reduction")},
      [](auto& a) {
        return ComputeDAG(
            {ops::matmul(input("A", {a.i("M"), a.i("K")}), input("B", {a.i("K"), a.i("N")}), "C")});
      },
      "gemm:M=1024,N=1024,K=1024");
  add(
      "matmul", "alias of gemm", P{req("M", "rows"), req("N", "columns"), req("K", "reduction")},
      [](auto& a) {
        return ComputeDAG(
            {ops::matmul(input("A", {a.i("M"), a.i("K")}), input("B", {a.i("K"), a.i("N")}), "C")});
      },
      "matmul:M=128,N=256,K=64");
  add(
      "dense", "Y[M,N] = X[M,K] · W[N,K]ᵀ (torch.nn.Linear)",
      P{req("M", "rows (batch)"), req("N", "output features"), req("K", "input features")},
      [](auto& a) {
        return ComputeDAG(
            {ops::dense(input("X", {a.i("M"), a.i("K")}), input("W", {a.i("N"), a.i("K")}), "Y")});
      },
      "dense:M=128,N=3072,K=768");
  add(
      "batch_matmul", "C[B,M,N] = A[B,M,K] · B[B,K,N]",
      P{req("B", "batch"), req("M", "rows"), req("N", "columns"), req("K", "reduction")},
      [](auto& a) {
        return ComputeDAG({ops::batchMatmul(input("A", {a.i("B"), a.i("M"), a.i("K")}),
                                            input("B", {a.i("B"), a.i("K"), a.i("N")}), "C")});
      },
      "batch_matmul:B=12,M=128,N=128,K=64");

  // ---- convolutions ----
  add(
      "conv1d", "1-d convolution, NCL data, KCR weight", convParams(1, false),
      [](auto& a) { return buildConv(a, 1, "conv1d"); }, "conv1d:N=1,C=64,L=256,K=128,R=3,pad=1");
  add(
      "conv2d", "2-d convolution, NCHW data, KCRS weight (groups, dilation)", convParams(2, false),
      [](auto& a) { return buildConv(a, 2, "conv2d"); },
      "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1");
  add(
      "depthwise_conv2d", "conv2d with groups=C and K=C·multiplier",
      P{opt("N", "1", "batch"), req("C", "channels"), req("H", "input height"),
        req("W", "input width"), opt("multiplier", "1", "outputs per channel"),
        req("R", "kernel height"), req("S", "kernel width"), opt("stride", "1", "stride"),
        opt("pad", "0", "zero padding on each side", 0), opt("dilation", "1", "dilation")},
      [](auto& a) {
        int64_t C = a.i("C");
        Tensor data = input("data", {a.i("N"), C, a.i("H"), a.i("W")});
        int64_t K = 0;
        if (!checkedMul(C, a.i("multiplier"), &K))
          WM_USER_ERROR() << "C=" << C << " times multiplier=" << a.i("multiplier") << " overflows";
        Tensor w = input("weight", {K, 1, a.i("R"), a.i("S")});
        return ComputeDAG({ops::conv(
            data, w, ops::ConvParams::uniform(2, a.i("stride"), a.i("pad"), a.i("dilation"), C),
            "depthwise_conv2d")});
      },
      "depthwise_conv2d:N=1,C=32,H=112,W=112,R=3,S=3,pad=1");
  add(
      "conv3d", "3-d convolution, NCDHW data, KCTRS weight", convParams(3, false),
      [](auto& a) { return buildConv(a, 3, "conv3d"); },
      "conv3d:N=1,C=16,D=16,H=28,W=28,K=32,T=3,R=3,S=3,pad=1");
  add(
      "conv2d_transpose", "transposed 2-d convolution, weight [C, K/groups, R, S]",
      convParams(2, true),
      [](auto& a) {
        auto t = convInputs(a, 2, true);
        int64_t op = a.i("output_padding");
        return ComputeDAG(
            {ops::convTranspose(t.data, t.weight, t.params, {op, op}, "conv2d_transpose")});
      },
      "conv2d_transpose:N=1,C=64,H=14,W=14,K=32,R=4,S=4,stride=2,pad=1");

  // ---- pooling ----
  P poolParams{opt("N", "1", "batch"),       req("C", "channels"),
               req("H", "input height"),     req("W", "input width"),
               req("R", "window height"),    req("S", "window width"),
               opt("stride", "1", "stride"), opt("pad", "0", "padding on each side", 0)};
  auto buildPool = [](const WorkloadArgs& a, ops::PoolKind kind, const char* name) {
    Tensor x = input("data", {a.i("N"), a.i("C"), a.i("H"), a.i("W")});
    int64_t s = a.i("stride"), p = a.i("pad");
    ops::PoolParams pp = ops::PoolParams::uniform(2, 1, s, p);
    pp.kernel = {a.i("R"), a.i("S")};
    for (int d = 0; d < 2; ++d)
      if (p >= pp.kernel[d])
        WM_USER_ERROR() << "pad=" << p << ": padding must be smaller than the kernel";
    return ComputeDAG({ops::pool(x, kind, pp, name)});
  };
  add(
      "max_pool2d", "2-d max pooling (NCHW), padding with -inf", poolParams,
      [buildPool](auto& a) { return buildPool(a, ops::PoolKind::Max, "max_pool2d"); },
      "max_pool2d:N=1,C=64,H=112,W=112,R=3,S=3,stride=2,pad=1");
  add(
      "avg_pool2d", "2-d average pooling (NCHW), padding counted", poolParams,
      [buildPool](auto& a) { return buildPool(a, ops::PoolKind::Avg, "avg_pool2d"); },
      "avg_pool2d:N=1,C=64,H=56,W=56,R=2,S=2,stride=2");
  add(
      "global_avg_pool2d", "mean over H and W (NCHW)",
      P{opt("N", "1", "batch"), req("C", "channels"), req("H", "height"), req("W", "width")},
      [](auto& a) {
        return ComputeDAG({ops::globalPool(input("data", {a.i("N"), a.i("C"), a.i("H"), a.i("W")}),
                                           ops::PoolKind::Avg, "global_avg_pool2d")});
      },
      "global_avg_pool2d:N=1,C=512,H=7,W=7");

  // ---- element-wise ----
  add(
      "bias_add", "x + bias[x.shape[axis]]",
      P{shapeParam(), opt("axis", "1", "axis the bias runs along", 0)},
      [](auto& a) {
        const Shape& s = a.shape("shape");
        int64_t axis = a.i("axis");
        if (axis >= static_cast<int64_t>(s.size()))
          WM_USER_ERROR() << "axis=" << axis << " is out of range for a rank-" << s.size()
                          << " shape";
        return ComputeDAG({ops::biasAdd(input("data", s), input("bias", {s[axis]}),
                                        static_cast<int>(axis), "bias_add")});
      },
      "bias_add:shape=1x64x56x56,axis=1");
  add(
      "relu", "max(x, 0)", P{shapeParam()},
      [](auto& a) { return buildUnary(a, ops::relu, "relu"); }, "relu:shape=1x64x56x56");
  add(
      "clip", "min(max(x, min), max)",
      P{shapeParam(), floatParam("min", "0", "lower bound"), floatParam("max", "6", "upper bound")},
      [](auto& a) {
        return ComputeDAG({ops::clip(wideInput(a.shape("shape")), a.f("min"), a.f("max"), "clip")});
      },
      "clip:shape=1x32x112x112,min=-1,max=1");
  add(
      "relu6", "min(max(x, 0), 6)", P{shapeParam()},
      [](auto& a) { return ComputeDAG({ops::clip(wideInput(a.shape("shape")), 0, 6, "relu6")}); },
      "relu6:shape=1x32x112x112");
  add(
      "sigmoid", "1 / (1 + exp(-x))", P{shapeParam()},
      [](auto& a) { return buildUnary(a, ops::sigmoid, "sigmoid"); }, "sigmoid:shape=128x768");
  add(
      "tanh", "tanh(x)", P{shapeParam()}, [](auto& a) { return buildUnary(a, ops::tanh, "tanh"); },
      "tanh:shape=128x768");
  add(
      "gelu", "x · ½(1 + erf(x/√2))", P{shapeParam()},
      [](auto& a) { return buildUnary(a, ops::gelu, "gelu"); }, "gelu:shape=128x3072");
  add(
      "add", "a + b (NumPy broadcasting)", binaryParams(),
      [](auto& a) { return buildBinary(a, ir::BinaryOp::Add, "add"); },
      "add:shape=1x64x56x56,shape_b=64x1x1");
  add(
      "sub", "a - b (NumPy broadcasting)", binaryParams(),
      [](auto& a) { return buildBinary(a, ir::BinaryOp::Sub, "sub"); }, "sub:shape=128x768");
  add(
      "mul", "a · b (NumPy broadcasting)", binaryParams(),
      [](auto& a) { return buildBinary(a, ir::BinaryOp::Mul, "mul"); }, "mul:shape=128x768");
  add(
      "div", "a / b (NumPy broadcasting)", binaryParams(),
      [](auto& a) { return buildBinary(a, ir::BinaryOp::Div, "div"); }, "div:shape=128x768");

  // ---- normalization ----
  add(
      "batch_norm", "inference batch norm over axis 1: (x-mean)/sqrt(var+eps)·gamma+beta",
      P{shapeParam(), floatParam("eps", "1e-5", "epsilon")},
      [](auto& a) {
        const Shape& s = a.shape("shape");
        if (s.size() < 2) WM_USER_ERROR() << "shape must have rank >= 2 (N, C, ...)";
        Shape c{s[1]};
        return ComputeDAG({ops::batchNorm(
            input("data", s), input("gamma", c), input("beta", c), input("mean", c),
            ir::placeholder("var", c, DType::F32, {0.25, 2.0}), a.f("eps"), "batch_norm")});
      },
      "batch_norm:shape=1x64x56x56");
  add(
      "softmax", "softmax over the last axis of an M×N matrix",
      P{req("M", "rows"), req("N", "columns")},
      [](auto& a) {
        return ComputeDAG({ops::softmax(input("data", {a.i("M"), a.i("N")}), -1, "softmax")});
      },
      "softmax:M=128,N=1024");
  add(
      "layer_norm", "layer norm over the last axis of an M×N matrix, gamma/beta [N]",
      P{req("M", "rows"), req("N", "normalized size"), floatParam("eps", "1e-5", "epsilon")},
      [](auto& a) {
        int64_t N = a.i("N");
        return ComputeDAG({ops::layerNorm(input("data", {a.i("M"), N}), input("gamma", {N}),
                                          input("beta", {N}), a.f("eps"), "layer_norm")});
      },
      "layer_norm:M=128,N=768");
  add(
      "norm", "2-norm of each B-slice: sqrt(sum over M,N of x²) (Ansor's NRM)",
      P{opt("B", "1", "batch"), req("M", "rows"), req("N", "columns")},
      [](auto& a) {
        return ComputeDAG({ops::norm2(input("data", {a.i("B"), a.i("M"), a.i("N")}), "norm")});
      },
      "norm:B=1,M=256,N=256");

  // ---- fused forms ----
  {
    P p = convParams(2, false);
    add(
        "conv2d_bias_relu", "relu(conv2d + bias[K])", p,
        [](auto& a) {
          auto t = convInputs(a, 2, false);
          Tensor c = ops::conv(t.data, t.weight, t.params, "conv2d");
          Tensor b = ops::biasAdd(c, input("bias", {a.i("K")}), 1, "bias_add");
          return ComputeDAG({ops::relu(b, "relu")});
        },
        "conv2d_bias_relu:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1");
    add(
        "conv2d_cl_bias_relu",
        "conv2d_bias_relu with the weight stored channels-last [C, R, S, K] (groups=1), as "
        "the ONNX loader stores a constant conv weight",
        p,
        [](auto& a) {
          auto t = convInputs(a, 2, false); // ops::conv refuses groups != 1
          Shape ws{a.i("C"), a.i("R"), a.i("S"), a.i("K")};
          t.params.weightChannelsLast = true;
          Tensor c = ops::conv(t.data, input("weight", ws), t.params, "conv2d");
          Tensor b = ops::biasAdd(c, input("bias", {a.i("K")}), 1, "bias_add");
          return ComputeDAG({ops::relu(b, "relu")});
        },
        "conv2d_cl_bias_relu:N=1,C=256,H=14,W=14,K=256,R=3,S=3,pad=1");
  }
  add(
      "dense_bias_gelu", "gelu(X · Wᵀ + bias[N])",
      P{req("M", "rows (batch)"), req("N", "output features"), req("K", "input features")},
      [](auto& a) {
        Tensor y =
            ops::dense(input("X", {a.i("M"), a.i("K")}), input("W", {a.i("N"), a.i("K")}), "dense");
        Tensor b = ops::biasAdd(y, input("bias", {a.i("N")}), 1, "bias_add");
        return ComputeDAG({ops::gelu(b, "gelu")});
      },
      "dense_bias_gelu:M=128,N=3072,K=768");
  return defs;
}

std::string paramList(const WorkloadDef& def) {
  std::vector<std::string> names;
  for (auto& p : def.params) names.push_back(p.name);
  return join(names, ", ");
}

std::string opList() {
  std::vector<std::string> names;
  for (auto& d : workloadDefs()) names.push_back(d.name);
  return join(names, ", ");
}

void parseValue(const WorkloadParam& p, const std::string& value, WorkloadArgs* args) {
  switch (p.kind) {
  case ParamKind::Int: {
    auto v = parseInt(value);
    if (!v) WM_USER_ERROR() << p.name << "=" << value << " is not an integer";
    if (*v < p.minValue) WM_USER_ERROR() << p.name << "=" << value << " must be >= " << p.minValue;
    if (*v > kMaxTensorElements)
      WM_USER_ERROR() << p.name << "=" << value << " must be <= " << kMaxTensorElements;
    args->ints[p.name] = *v;
    return;
  }
  case ParamKind::Float: {
    auto v = parseDouble(value);
    if (!v) WM_USER_ERROR() << p.name << "=" << value << " is not a number";
    args->floats[p.name] = *v;
    return;
  }
  case ParamKind::Shape: {
    Shape s;
    for (auto& dim : split(value, 'x')) {
      auto v = parseInt(dim);
      if (!v || *v < p.minValue)
        WM_USER_ERROR() << p.name << "=" << value << " is not a shape (dimensions >= " << p.minValue
                        << " joined by x, e.g. 1x64x56x56)";
      s.push_back(*v);
    }
    if (s.size() > 6) WM_USER_ERROR() << p.name << "=" << value << " has more than 6 dimensions";
    args->shapes[p.name] = s;
    return;
  }
  }
}

} // namespace

const std::vector<WorkloadDef>& workloadDefs() {
  static const std::vector<WorkloadDef> defs = makeDefs();
  return defs;
}

const WorkloadDef* findWorkload(const std::string& name) {
  for (auto& d : workloadDefs())
    if (d.name == name) return &d;
  return nullptr;
}

Workload parseWorkload(const std::string& spec) {
  try {
    std::string s = trim(spec);
    if (s.empty()) WM_USER_ERROR() << "empty workload spec";
    size_t colon = s.find(':');
    std::string opName = s.substr(0, colon);
    const WorkloadDef* def = findWorkload(opName);
    if (!def) WM_USER_ERROR() << "unknown op '" << opName << "' (known: " << opList() << ")";
    std::map<std::string, std::string> given;
    if (colon != std::string::npos) {
      std::string rest = s.substr(colon + 1);
      if (rest.empty()) WM_USER_ERROR() << "nothing after ':'";
      for (auto& part : split(rest, ',')) {
        size_t eq = part.find('=');
        if (eq == std::string::npos || eq == 0)
          WM_USER_ERROR() << "'" << part << "' is not key=value";
        std::string key = part.substr(0, eq), value = part.substr(eq + 1);
        bool known = false;
        for (auto& p : def->params) known |= p.name == key;
        if (!known)
          WM_USER_ERROR() << "unknown parameter '" << key << "' for " << def->name
                          << " (parameters: " << paramList(*def) << ")";
        if (given.count(key)) WM_USER_ERROR() << "parameter '" << key << "' given twice";
        if (value.empty()) WM_USER_ERROR() << "parameter '" << key << "' has no value";
        given[key] = value;
      }
    }
    WorkloadArgs args;
    std::vector<std::string> canon;
    for (auto& p : def->params) {
      auto it = given.find(p.name);
      if (it == given.end() && p.defaultValue.empty())
        WM_USER_ERROR() << "missing parameter '" << p.name << "' (" << p.help << ")";
      std::string value = it == given.end() ? p.defaultValue : it->second;
      parseValue(p, value, &args);
      canon.push_back(p.name + "=" + value);
    }
    Workload w;
    w.spec = spec;
    w.def = def;
    w.canonical = def->name + ":" + join(canon, ",");
    w.dag = def->build(args);
    return w;
  } catch (const UserError& e) {
    throw UserError("workload '" + spec + "': " + e.what());
  }
}

} // namespace wm
