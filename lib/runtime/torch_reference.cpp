// libtorch reference executor: each ONNX node by libtorch operators, following the ONNX
// specification directly (not wmtune's converters).
#include <torch/torch.h>
#undef CHECK

#include <wm/frontend/workload.h>
#include <wm/runtime/torch_reference.h>
#include <wm/support/error.h>

#include <functional>
#include <map>

namespace wm::runtime {

using frontend::Attribute;
using frontend::Node;
namespace F = torch::nn::functional;

namespace {

torch::Dtype torchType(ir::DType t, bool useDouble) {
  switch (t) {
  case ir::DType::F32: return useDouble ? torch::kFloat64 : torch::kFloat32;
  case ir::DType::I32: return torch::kInt32;
  case ir::DType::I64: return torch::kInt64;
  case ir::DType::Bool: return torch::kBool;
  default:
    WM_USER_ERROR() << "element type " << ir::dtypeName(t) << " is not supported by the reference";
  }
}

torch::Tensor toTorch(const ir::NDArray& a, bool useDouble) {
  std::vector<int64_t> shape(a.shape().begin(), a.shape().end());
  auto t = torch::from_blob(const_cast<double*>(a.data()), shape, torch::kFloat64).clone();
  if (a.dtype() == ir::DType::I64) { // exact beyond 2^53 is not needed; saturate INT64_MAX
    t = t.clamp(-9.2e18, 9.2e18);
  }
  return t.to(torchType(a.dtype(), useDouble));
}

ir::NDArray fromTorch(const torch::Tensor& t) {
  ir::DType d = t.scalar_type() == torch::kInt64   ? ir::DType::I64
                : t.scalar_type() == torch::kInt32 ? ir::DType::I32
                : t.scalar_type() == torch::kBool  ? ir::DType::Bool
                                                   : ir::DType::F32;
  ir::NDArray a(d, ir::Shape(t.sizes().begin(), t.sizes().end()));
  auto c = t.to(torch::kFloat64).contiguous();
  std::memcpy(a.data(), c.data_ptr<double>(), sizeof(double) * static_cast<size_t>(a.size()));
  return a;
}

struct NodeCtx {
  const Node& n;
  int opset;
  bool dbl;
  std::vector<torch::Tensor> in; // undefined for missing inputs

  [[noreturn]] void fail(const std::string& m) const {
    WM_USER_ERROR() << "reference: node '" << n.name << "' (" << n.op << "): " << m;
  }
  bool has(size_t i) const { return i < in.size() && in[i].defined(); }
  const Attribute* attr(const std::string& k) const {
    auto it = n.attrs.find(k);
    return it == n.attrs.end() ? nullptr : &it->second;
  }
  int64_t i(const std::string& k, int64_t d) const {
    auto* a = attr(k);
    return a ? a->i : d;
  }
  double f(const std::string& k, double d) const {
    auto* a = attr(k);
    return a ? a->f : d;
  }
  std::string s(const std::string& k, const std::string& d) const {
    auto* a = attr(k);
    return a ? a->s : d;
  }
  std::vector<int64_t> ints(const std::string& k, std::vector<int64_t> d) const {
    auto* a = attr(k);
    return a ? a->ints : d;
  }
  std::vector<int64_t> intsOf(size_t idx) const {
    auto t = in.at(idx).to(torch::kInt64).contiguous();
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  }
  int64_t axis(int64_t a, int64_t rank) const { return a < 0 ? a + rank : a; }
};

/// Pads for conv/pool: [before..., after...], from pads or auto_pad.
std::vector<int64_t> pads(const NodeCtx& c, const torch::Tensor& x, const std::vector<int64_t>& k,
                          const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  size_t n = k.size();
  std::string ap = c.s("auto_pad", "NOTSET");
  std::vector<int64_t> p(2 * n, 0);
  if (ap == "NOTSET") return c.ints("pads", p);
  if (ap == "VALID") return p;
  for (size_t i = 0; i < n; ++i) {
    int64_t in = x.size(static_cast<int64_t>(2 + i));
    int64_t out = (in + s[i] - 1) / s[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in);
    p[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
    p[n + i] = total - p[i];
  }
  return p;
}

/// F::pad's order (last dim first) from ONNX-style [before..., after...] for the spatial dims.
std::vector<int64_t> torchPad(const std::vector<int64_t>& p) {
  size_t n = p.size() / 2;
  std::vector<int64_t> r;
  for (size_t i = n; i-- > 0;) {
    r.push_back(p[i]);
    r.push_back(p[n + i]);
  }
  return r;
}

torch::Tensor pool(const NodeCtx& c, const torch::Tensor& x, bool isMax) {
  size_t n = static_cast<size_t>(x.dim() - 2);
  auto k = c.ints("kernel_shape", {});
  auto s = c.ints("strides", std::vector<int64_t>(n, 1));
  auto d = c.ints("dilations", std::vector<int64_t>(n, 1));
  bool ceil = c.i("ceil_mode", 0) != 0;
  auto p = pads(c, x, k, s, d);
  bool sym = true;
  for (size_t i = 0; i < n; ++i) sym &= p[i] == p[n + i] && p[i] <= k[i] / 2;
  if (isMax) {
    torch::Tensor xp = x;
    std::vector<int64_t> padding(n, 0);
    if (sym)
      padding.assign(p.begin(), p.begin() + static_cast<long>(n));
    else
      xp =
          F::pad(x, F::PadFuncOptions(torchPad(p)).value(-std::numeric_limits<double>::infinity()));
    if (n == 1) return torch::max_pool1d(xp, k, s, padding, d, ceil);
    if (n == 2) return torch::max_pool2d(xp, k, s, padding, d, ceil);
    return torch::max_pool3d(xp, k, s, padding, d, ceil);
  }
  // average: sum / count, both as averages over the padded input (the window divisor cancels);
  // the count pads with ones when the pads count (count_include_pad), else with zeros
  bool include = c.i("count_include_pad", 0) != 0;
  auto avg = [&](const torch::Tensor& t, double padValue) {
    auto tp = F::pad(t, F::PadFuncOptions(torchPad(p)).value(padValue));
    std::vector<int64_t> zero(n, 0);
    if (n == 1) return torch::avg_pool1d(tp, k, s, zero, ceil, true);
    if (n == 2) return torch::avg_pool2d(tp, k, s, zero, ceil, true);
    return torch::avg_pool3d(tp, k, s, zero, ceil, true);
  };
  return avg(x, 0.0) / avg(torch::ones_like(x), include ? 1.0 : 0.0);
}

std::vector<int64_t> broadcastShape(std::vector<int64_t> a, std::vector<int64_t> b) {
  size_t n = std::max(a.size(), b.size());
  a.insert(a.begin(), n - a.size(), 1);
  b.insert(b.begin(), n - b.size(), 1);
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = a[i] == 1 ? b[i] : a[i];
  return r;
}

torch::Tensor reduceAxes(const NodeCtx& c, const torch::Tensor& x, const std::string& op) {
  std::vector<int64_t> axes;
  bool fromInput = op == "ReduceSum" && c.opset >= 13;
  if (fromInput) {
    if (c.has(1)) axes = c.intsOf(1);
  } else
    axes = c.ints("axes", {});
  bool keep = c.i("keepdims", 1) != 0;
  if (axes.empty()) {
    if (fromInput && c.i("noop_with_empty_axes", 0)) return x;
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  }
  for (auto& a : axes) a = c.axis(a, x.dim());
  if (op == "ReduceSum") return x.sum(axes, keep);
  if (op == "ReduceMean") return x.mean(axes, keep);
  if (op == "ReduceMax") return x.amax(axes, keep);
  return x.amin(axes, keep);
}

/// Every op the reference runs: the op types and the function (the ONNX spec in libtorch).
struct RefOp {
  std::vector<std::string> ops;
  std::vector<torch::Tensor> (*run)(NodeCtx& c);
};

#define WM_REF_PRELUDE                                                                             \
  [[maybe_unused]] const std::string& op = c.n.op;                                                 \
  [[maybe_unused]] auto& in = c.in;                                                                \
  [[maybe_unused]] auto fdt = c.dbl ? torch::kFloat64 : torch::kFloat32

const std::vector<RefOp>& refOps() {
  static const std::vector<RefOp> table = {
      {{"Conv", "ConvTranspose"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         auto x = in[0], w = in[1];
         size_t n = static_cast<size_t>(x.dim() - 2);
         std::vector<int64_t> k(w.sizes().begin() + 2, w.sizes().end());
         auto s = c.ints("strides", std::vector<int64_t>(n, 1));
         auto d = c.ints("dilations", std::vector<int64_t>(n, 1));
         int64_t g = c.i("group", 1);
         torch::Tensor b = c.has(2) ? in[2] : torch::Tensor();
         if (op == "Conv") {
           auto p = pads(c, x, k, s, d);
           auto xp = F::pad(x, F::PadFuncOptions(torchPad(p)));
           return {at::convolution(xp, w, b, s, std::vector<int64_t>(n, 0), d, false,
                                   std::vector<int64_t>(n, 0), g)};
         }
         auto op_ = c.ints("output_padding", std::vector<int64_t>(n, 0));
         auto full = at::convolution(x, w, b, s, std::vector<int64_t>(n, 0), d, true, op_, g);
         std::vector<int64_t> p(2 * n, 0);
         auto target = c.ints("output_shape", {});
         std::string ap = c.s("auto_pad", "NOTSET");
         if (!target.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
           if (target.size() > n)
             target.erase(target.begin(), target.begin() + static_cast<long>(target.size() - n));
           for (size_t i = 0; i < n; ++i) {
             int64_t want = target.empty() ? x.size(static_cast<int64_t>(2 + i)) * s[i] : target[i];
             int64_t total = full.size(static_cast<int64_t>(2 + i)) - want;
             p[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
             p[n + i] = total - p[i];
           }
         } else if (ap == "NOTSET") {
           p = c.ints("pads", p);
         }
         for (size_t i = 0; i < n; ++i) {
           int64_t dim = static_cast<int64_t>(2 + i);
           full = full.narrow(dim, p[i], full.size(dim) - p[i] - p[n + i]);
         }
         return {full};
       }},
      {{"Gemm"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         auto a = c.i("transA", 0) ? in[0].t() : in[0];
         auto b = c.i("transB", 0) ? in[1].t() : in[1];
         auto y = torch::matmul(a, b) * c.f("alpha", 1.0);
         if (c.has(2)) y = y + in[2] * c.f("beta", 1.0);
         return {y};
       }},
      {{"MatMul"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::matmul(in[0], in[1])};
       }},
      {{"BatchNormalization"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         std::vector<int64_t> shape(static_cast<size_t>(in[0].dim()), 1);
         shape[1] = -1;
         auto v = [&](int i) { return in[i].reshape(shape); };
         return {(in[0] - v(3)) / torch::sqrt(v(4) + c.f("epsilon", 1e-5)) * v(1) + v(2)};
       }},
      {{"Relu"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::relu(in[0])};
       }},
      {{"Sigmoid"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::sigmoid(in[0])};
       }},
      {{"Tanh"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::tanh(in[0])};
       }},
      {{"Erf"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::erf(in[0])};
       }},
      {{"Exp"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::exp(in[0])};
       }},
      {{"Log"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::log(in[0])};
       }},
      {{"Sqrt"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::sqrt(in[0])};
       }},
      {{"Reciprocal"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::reciprocal(in[0])};
       }},
      {{"Neg"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::neg(in[0])};
       }},
      {{"Abs"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::abs(in[0])};
       }},
      {{"HardSigmoid"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::clamp(in[0] * c.f("alpha", 0.2) + c.f("beta", 0.5), 0, 1)};
       }},
      {{"HardSwish"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {in[0] * torch::clamp(in[0] / 6.0 + 0.5, 0, 1)};
       }},
      {{"Clip"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         auto y = in[0];
         if (c.has(1)) y = torch::maximum(y, in[1]);
         if (c.has(2)) y = torch::minimum(y, in[2]);
         return {y};
       }},
      {{"Add"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {in[0] + in[1]};
       }},
      {{"Sub"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {in[0] - in[1]};
       }},
      {{"Mul"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {in[0] * in[1]};
       }},
      {{"Div"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {in[0].is_floating_point() ? in[0] / in[1] : torch::div(in[0], in[1], "trunc")};
       }},
      {{"Pow"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::pow(in[0], in[1].to(in[0].scalar_type()))};
       }},
      {{"Where"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {torch::where(in[0], in[1], in[2])};
       }},
      {{"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         if (op == "Equal") return {torch::eq(in[0], in[1])};
         if (op == "Greater") return {torch::gt(in[0], in[1])};
         if (op == "GreaterOrEqual") return {torch::ge(in[0], in[1])};
         if (op == "Less") return {torch::lt(in[0], in[1])};
         return {torch::le(in[0], in[1])};
       }},
      {{"Cast"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         int64_t to = c.i("to", 1);
         auto t = to == 1   ? fdt
                  : to == 6 ? torch::kInt32
                  : to == 7 ? torch::kInt64
                  : to == 9 ? torch::kBool
                            : torch::kFloat64;
         if (to != 1 && to != 6 && to != 7 && to != 9)
           c.fail("cast to ONNX type " + std::to_string(to));
         return {in[0].to(t)};
       }},
      {{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {reduceAxes(c, in[0], op)};
       }},
      {{"LayerNormalization"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         int64_t axis = c.axis(c.i("axis", -1), in[0].dim());
         std::vector<int64_t> ns(in[0].sizes().begin() + axis, in[0].sizes().end());
         auto scale = in[1].expand(ns).contiguous();
         torch::Tensor b = c.has(2) ? in[2].expand(ns).contiguous() : torch::Tensor();
         std::vector<int64_t> dims;
         for (int64_t d = axis; d < in[0].dim(); ++d) dims.push_back(d);
         auto mean = in[0].mean(dims, true);
         auto invStd = torch::rsqrt((in[0] - mean).pow(2).mean(dims, true) + c.f("epsilon", 1e-5));
         return {torch::layer_norm(in[0], ns, scale, b, c.f("epsilon", 1e-5)), mean, invStd};
       }},
      {{"Softmax"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         int64_t axis = c.axis(c.i("axis", c.opset >= 13 ? -1 : 1), in[0].dim());
         if (c.opset >= 13) return {torch::softmax(in[0], axis)};
         auto flat = in[0].flatten(axis).flatten(0, axis - 1 < 0 ? 0 : axis - 1);
         if (axis == 0) flat = in[0].reshape({1, -1});
         return {torch::softmax(flat, 1).reshape(in[0].sizes())};
       }},
      {{"MaxPool"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {pool(c, in[0], true)};
       }},
      {{"AveragePool"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         return {pool(c, in[0], false)};
       }},
      {{"GlobalAveragePool", "GlobalMaxPool"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         std::vector<int64_t> dims;
         for (int64_t d = 2; d < in[0].dim(); ++d) dims.push_back(d);
         return {op == "GlobalAveragePool" ? in[0].mean(dims, true) : in[0].amax(dims, true)};
       }},
      {{"Pad"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         auto p = c.intsOf(1);
         size_t r = static_cast<size_t>(in[0].dim());
         std::vector<int64_t> tp;
         for (size_t i = r; i-- > 0;) {
           tp.push_back(p[i]);
           tp.push_back(p[r + i]);
         }
         std::string mode = c.s("mode", "constant");
         if (mode == "constant") {
           double v = c.has(2) ? in[2].item<double>() : 0.0;
           return {torch::constant_pad_nd(in[0], tp, v)};
         }
         while (tp.size() > 2 && tp[tp.size() - 1] == 0 && tp[tp.size() - 2] == 0)
           tp.resize(tp.size() - 2);
         auto x = in[0];
         int64_t lead = x.dim() - static_cast<int64_t>(tp.size() / 2);
         // reflect/replicate need a (batch, channel) prefix: flatten the leading
         // dims
         auto sizes = x.sizes().vec();
         std::vector<int64_t> shp{1, 1};
         for (int64_t d = 0; d < lead; ++d) shp[1] *= sizes[static_cast<size_t>(d)];
         for (int64_t d = lead; d < x.dim(); ++d) shp.push_back(sizes[static_cast<size_t>(d)]);
         auto opts = F::PadFuncOptions(tp);
         if (mode == "reflect")
           opts.mode(torch::kReflect);
         else
           opts.mode(torch::kReplicate);
         auto y = F::pad(x.reshape(shp), opts);
         std::vector<int64_t> out(sizes.begin(), sizes.begin() + lead);
         for (int64_t d = 2; d < y.dim(); ++d) out.push_back(y.size(d));
         return {y.reshape(out)};
       }},
      {{"Flatten"},
       [](NodeCtx& c) -> std::vector<torch::Tensor> {
         WM_REF_PRELUDE;
         int64_t axis = c.axis(c.i("axis", 1), in[0].dim());
         int64_t a = 1;
         for (int64_t d = 0; d < axis; ++d) a *= in[0].size(d);
         return {in[0].reshape({a, in[0].numel() / std::max<int64_t>(a, 1)})};
       }},
      {{"Reshape"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            auto shape = c.intsOf(1);
                            if (!c.i("allowzero", 0))
                              for (size_t i = 0; i < shape.size(); ++i)
                                if (shape[i] == 0) shape[i] = in[0].size(static_cast<int64_t>(i));
                            return {in[0].reshape(shape)};
                          }},
      {{"Transpose"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            std::vector<int64_t> perm;
                            for (int64_t d = in[0].dim(); d-- > 0;) perm.push_back(d);
                            return {in[0].permute(c.ints("perm", perm)).contiguous()};
                          }},
      {{"Concat"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            std::vector<torch::Tensor> ts;
                            for (auto& t : in)
                              if (t.defined()) ts.push_back(t);
                            return {torch::cat(ts, c.axis(c.i("axis", 0), ts[0].dim()))};
                          }},
      {{"Split"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            int64_t axis = c.axis(c.i("axis", 0), in[0].dim());
                            std::vector<int64_t> sizes =
                                c.opset >= 13 ? (c.has(1) ? c.intsOf(1) : std::vector<int64_t>{})
                                              : c.ints("split", {});
                            if (sizes.empty())
                              sizes.assign(c.n.outputs.size(),
                                           in[0].size(axis) /
                                               static_cast<int64_t>(c.n.outputs.size()));
                            auto parts = torch::split_with_sizes(in[0], sizes, axis);
                            return std::vector<torch::Tensor>(parts.begin(), parts.end());
                          }},
      {{"Slice"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            auto starts = c.intsOf(1), ends = c.intsOf(2);
                            std::vector<int64_t> axes, steps;
                            if (c.has(3))
                              axes = c.intsOf(3);
                            else
                              for (size_t i = 0; i < starts.size(); ++i)
                                axes.push_back(static_cast<int64_t>(i));
                            steps = c.has(4) ? c.intsOf(4) : std::vector<int64_t>(starts.size(), 1);
                            auto y = in[0];
                            for (size_t i = 0; i < starts.size(); ++i) {
                              int64_t a = c.axis(axes[i], y.dim()), n = y.size(a), st = steps[i];
                              int64_t b = std::clamp<int64_t>(starts[i], -(n + 1), n + 1),
                                      e = std::clamp<int64_t>(ends[i], -(n + 1), n + 1);
                              if (b < 0) b += n;
                              if (e < 0) e += n;
                              std::vector<int64_t> idx;
                              if (st > 0)
                                for (int64_t k = std::clamp<int64_t>(b, 0, n);
                                     k < std::clamp<int64_t>(e, 0, n); k += st)
                                  idx.push_back(k);
                              else
                                for (int64_t k = std::clamp<int64_t>(b, 0, n - 1);
                                     k > std::clamp<int64_t>(e, -1, n - 1); k += st)
                                  idx.push_back(k);
                              y = y.index_select(a, torch::tensor(idx, torch::kInt64));
                            }
                            return {y};
                          }},
      {{"Squeeze", "Unsqueeze"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            std::vector<int64_t> axes =
                                c.opset >= 13 ? (c.has(1) ? c.intsOf(1) : std::vector<int64_t>{})
                                              : c.ints("axes", {});
                            auto y = in[0];
                            if (op == "Squeeze") {
                              if (axes.empty()) return {y.squeeze()};
                              std::vector<int64_t> shape;
                              for (auto& a : axes) a = c.axis(a, y.dim());
                              for (int64_t d = 0; d < y.dim(); ++d)
                                if (std::find(axes.begin(), axes.end(), d) == axes.end())
                                  shape.push_back(y.size(d));
                              return {y.reshape(shape)};
                            }
                            int64_t r = y.dim() + static_cast<int64_t>(axes.size());
                            for (auto& a : axes) a = c.axis(a, r);
                            std::sort(axes.begin(), axes.end());
                            for (int64_t a : axes) y = y.unsqueeze(a);
                            return {y};
                          }},
      {{"Expand"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            auto shape = broadcastShape(in[0].sizes().vec(), c.intsOf(1));
                            return {in[0].expand(shape).contiguous()};
                          }},
      {{"Gather"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            int64_t axis = c.axis(c.i("axis", 0), in[0].dim());
                            auto idx = in[1].to(torch::kInt64);
                            idx = torch::where(idx < 0, idx + in[0].size(axis), idx);
                            auto g = in[0].index_select(axis, idx.flatten());
                            std::vector<int64_t> shape(in[0].sizes().begin(),
                                                       in[0].sizes().begin() + axis);
                            for (int64_t d : idx.sizes()) shape.push_back(d);
                            for (int64_t d = axis + 1; d < in[0].dim(); ++d)
                              shape.push_back(in[0].size(d));
                            return {g.reshape(shape)};
                          }},
      {{"Identity"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            return {in[0]};
                          }},
      {{"Dropout"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            return {in[0], torch::ones_like(
                                               in[0], torch::kBool)}; // inference: nothing dropped
                          }},
      {{"Shape"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            auto s = in[0].sizes().vec();
                            int64_t r = static_cast<int64_t>(s.size());
                            int64_t b = c.i("start", 0), e = c.i("end", r);
                            b = std::clamp<int64_t>(b < 0 ? b + r : b, 0, r);
                            e = std::clamp<int64_t>(e < 0 ? e + r : e, 0, r);
                            std::vector<int64_t> v(s.begin() + b, s.begin() + std::max(b, e));
                            return {torch::tensor(v, torch::kInt64)};
                          }},
      {{"ConstantOfShape"},
       [](NodeCtx& c) -> std::
                          vector<torch::Tensor> {
                            WM_REF_PRELUDE;
                            auto shape = c.intsOf(0);
                            if (auto* a = c.attr("value")) {
                              auto t = toTorch(*a->tensor, c.dbl);
                              return {torch::full(shape, t.item(), t.options())};
                            }
                            return {torch::zeros(shape, fdt)};
                          }},
  };
  return table;
}

#undef WM_REF_PRELUDE

std::vector<torch::Tensor> runNode(NodeCtx& c) {
  for (auto& r : refOps())
    for (auto& o : r.ops)
      if (o == c.n.op) return r.run(c);
  c.fail("op " + c.n.op + " is not implemented by the reference");
}

} // namespace

struct TorchReference::Impl {
  const frontend::Graph& g;
  bool dbl;
  int threads;
  std::map<std::string, torch::Tensor> consts;
  std::vector<torch::Tensor> lastInputs;

  std::vector<torch::Tensor> exec(const std::vector<torch::Tensor>& inputs) {
    torch::NoGradGuard ng;
    torch::set_num_threads(threads);
    std::map<std::string, torch::Tensor> env = consts;
    for (size_t i = 0; i < g.inputs.size(); ++i) env[g.inputs[i]] = inputs[i];
    for (auto& n : g.nodes) {
      std::vector<torch::Tensor> outs;
      if (n.op == "Constant") {
        const auto& [name, a] = *n.attrs.begin();
        if (a.kind == Attribute::Kind::Tensor)
          outs.push_back(toTorch(*a.tensor, dbl));
        else if (name == "value_float")
          outs.push_back(torch::tensor(a.f, dbl ? torch::kFloat64 : torch::kFloat32));
        else if (name == "value_int")
          outs.push_back(torch::tensor(a.i, torch::kInt64));
        else if (name == "value_floats")
          outs.push_back(
              torch::tensor(a.floats, torch::kFloat64).to(dbl ? torch::kFloat64 : torch::kFloat32));
        else
          outs.push_back(torch::tensor(a.ints, torch::kInt64));
      } else {
        NodeCtx c{n, g.opset, dbl, {}};
        for (auto& name : n.inputs) c.in.push_back(name.empty() ? torch::Tensor() : env.at(name));
        outs = runNode(c);
      }
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        if (n.outputs[o].empty()) continue;
        if (o >= outs.size())
          WM_USER_ERROR() << "reference: node '" << n.name << "' (" << n.op << "): output " << o
                          << " is not implemented";
        env[n.outputs[o]] = outs[o];
      }
    }
    std::vector<torch::Tensor> r;
    for (auto& o : g.outputs) r.push_back(env.at(o));
    return r;
  }
};

TorchReference::TorchReference(const frontend::Graph& graph, bool useDouble, int threads)
    : impl_(std::make_unique<Impl>(Impl{graph, useDouble, threads > 0 ? threads : 1, {}, {}})) {
  for (auto& [name, a] : graph.initializers) impl_->consts[name] = toTorch(a, useDouble);
}

TorchReference::~TorchReference() = default;

std::vector<std::string> TorchReference::supportedOps() {
  std::vector<std::string> ops{"Constant"}; // run by exec() itself
  for (auto& r : refOps()) ops.insert(ops.end(), r.ops.begin(), r.ops.end());
  return ops;
}

std::vector<ir::NDArray> TorchReference::run(const std::vector<ir::NDArray>& inputs) {
  impl_->lastInputs.clear();
  for (auto& a : inputs) impl_->lastInputs.push_back(toTorch(a, impl_->dbl));
  std::vector<ir::NDArray> outs;
  for (auto& t : impl_->exec(impl_->lastInputs)) outs.push_back(fromTorch(t));
  return outs;
}

void TorchReference::rerun() {
  impl_->exec(impl_->lastInputs);
}

// ---- built-in workloads (TorchWorkload): libtorch's operator for each workload spec ----

namespace {

using WInputs = std::map<std::string, torch::Tensor>;
using WFn = std::function<torch::Tensor(const WInputs&)>;

// A parameter of a canonical spec (every parameter present).
std::string specParam(const std::string& canonical, const std::string& key) {
  std::string body = canonical.substr(canonical.find(':') + 1);
  size_t at = 0;
  while (at <= body.size()) {
    size_t comma = body.find(',', at);
    std::string kv = body.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    auto eq = kv.find('=');
    if (eq != std::string::npos && kv.substr(0, eq) == key) return kv.substr(eq + 1);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  throw InternalError("workload " + canonical + " has no parameter " + key);
}
int64_t pInt(const std::string& c, const std::string& k) {
  return std::stoll(specParam(c, k));
}
double pFloat(const std::string& c, const std::string& k) {
  return std::stod(specParam(c, k));
}

WFn convN(int dims, const std::string& c, bool biasRelu = false) {
  int64_t st = pInt(c, "stride"), p = pInt(c, "pad"), d = pInt(c, "dilation"),
          g = pInt(c, "groups");
  return [=](const WInputs& in) {
    std::vector<int64_t> S(dims, st), P(dims, p), D(dims, d);
    const auto &x = in.at("data"), &w = in.at("weight");
    torch::Tensor b = biasRelu ? in.at("bias") : torch::Tensor();
    if (dims == 1) return torch::conv1d(x, w, b, S, P, D, g);
    if (dims == 3) return torch::conv3d(x, w, b, S, P, D, g);
    auto y = torch::conv2d(x, w, b, S, P, D, g);
    return biasRelu ? torch::relu(y) : y;
  };
}

// op name -> the libtorch function of a canonical spec
const std::map<std::string, std::function<WFn(const std::string&)>>& workloadTable() {
  static const std::map<std::string, std::function<WFn(const std::string&)>> t = [] {
    std::map<std::string, std::function<WFn(const std::string&)>> m;
    auto fixed = [](WFn f) { return [f](const std::string&) { return f; }; };
    m["gemm"] = fixed([](const WInputs& in) { return torch::matmul(in.at("A"), in.at("B")); });
    m["matmul"] = m["gemm"];
    m["dense"] = fixed([](const WInputs& in) { return torch::linear(in.at("X"), in.at("W")); });
    m["batch_matmul"] = fixed([](const WInputs& in) { return torch::bmm(in.at("A"), in.at("B")); });
    m["conv1d"] = [](const std::string& c) { return convN(1, c); };
    m["conv2d"] = [](const std::string& c) { return convN(2, c); };
    m["conv3d"] = [](const std::string& c) { return convN(3, c); };
    m["conv2d_bias_relu"] = [](const std::string& c) { return convN(2, c, true); };
    m["conv2d_cl_bias_relu"] = [](const std::string& c) -> WFn {
      WFn f = convN(2, c, true);
      return [f](const WInputs& in) { // the weight [C, R, S, K] back to [K, C, R, S]
        WInputs nchw = in;
        nchw.at("weight") = in.at("weight").permute({3, 0, 1, 2});
        return f(nchw);
      };
    };
    m["depthwise_conv2d"] = [](const std::string& c) -> WFn {
      int64_t st = pInt(c, "stride"), p = pInt(c, "pad"), d = pInt(c, "dilation"), C = pInt(c, "C");
      return [=](const WInputs& in) {
        return torch::conv2d(in.at("data"), in.at("weight"), {}, st, p, d, C);
      };
    };
    m["conv2d_transpose"] = [](const std::string& c) -> WFn {
      int64_t st = pInt(c, "stride"), p = pInt(c, "pad"), d = pInt(c, "dilation"),
              g = pInt(c, "groups"), op = pInt(c, "output_padding");
      return [=](const WInputs& in) {
        return torch::conv_transpose2d(in.at("data"), in.at("weight"), {}, st, p, op, g, d);
      };
    };
    m["max_pool2d"] = [](const std::string& c) -> WFn {
      int64_t R = pInt(c, "R"), S = pInt(c, "S"), st = pInt(c, "stride"), p = pInt(c, "pad");
      return [=](const WInputs& in) { return torch::max_pool2d(in.at("data"), {R, S}, st, p); };
    };
    m["avg_pool2d"] = [](const std::string& c) -> WFn {
      int64_t R = pInt(c, "R"), S = pInt(c, "S"), st = pInt(c, "stride"), p = pInt(c, "pad");
      return [=](const WInputs& in) {
        return torch::avg_pool2d(in.at("data"), {R, S}, st, p, false, true);
      };
    };
    m["global_avg_pool2d"] = fixed([](const WInputs& in) {
      return torch::adaptive_avg_pool2d(in.at("data"), {1, 1});
    });
    m["bias_add"] = [](const std::string& c) -> WFn {
      int64_t axis = pInt(c, "axis");
      return [=](const WInputs& in) {
        const auto& x = in.at("data");
        std::vector<int64_t> view(x.dim(), 1);
        view[axis] = -1;
        return x + in.at("bias").view(view);
      };
    };
    m["relu"] = fixed([](const WInputs& in) { return torch::relu(in.at("data")); });
    m["clip"] = [](const std::string& c) -> WFn {
      double lo = pFloat(c, "min"), hi = pFloat(c, "max");
      return [=](const WInputs& in) { return torch::clamp(in.at("data"), lo, hi); };
    };
    m["relu6"] = fixed([](const WInputs& in) { return torch::clamp(in.at("data"), 0.0, 6.0); });
    m["sigmoid"] = fixed([](const WInputs& in) { return torch::sigmoid(in.at("data")); });
    m["tanh"] = fixed([](const WInputs& in) { return torch::tanh(in.at("data")); });
    m["gelu"] = fixed([](const WInputs& in) { return torch::gelu(in.at("data")); });
    m["add"] = fixed([](const WInputs& in) { return in.at("a") + in.at("b"); });
    m["sub"] = fixed([](const WInputs& in) { return in.at("a") - in.at("b"); });
    m["mul"] = fixed([](const WInputs& in) { return in.at("a") * in.at("b"); });
    m["div"] = fixed([](const WInputs& in) { return in.at("a") / in.at("b"); });
    m["batch_norm"] = [](const std::string& c) -> WFn {
      double eps = pFloat(c, "eps");
      return [=](const WInputs& in) {
        return torch::batch_norm(in.at("data"), in.at("gamma"), in.at("beta"), in.at("mean"),
                                 in.at("var"), false, 0.1, eps, false);
      };
    };
    m["softmax"] = fixed([](const WInputs& in) { return torch::softmax(in.at("data"), -1); });
    m["layer_norm"] = [](const std::string& c) -> WFn {
      double eps = pFloat(c, "eps");
      int64_t N = pInt(c, "N");
      return [=](const WInputs& in) {
        return torch::layer_norm(in.at("data"), {N}, in.at("gamma"), in.at("beta"), eps);
      };
    };
    m["norm"] = fixed([](const WInputs& in) { return in.at("data").flatten(1).norm(2, {1}); });
    m["dense_bias_gelu"] = fixed([](const WInputs& in) {
      return torch::gelu(torch::linear(in.at("X"), in.at("W"), in.at("bias")));
    });
    return m;
  }();
  return t;
}

} // namespace

struct TorchWorkload::Impl {
  WFn fn;
  std::vector<std::string> names; // the placeholders, in DAG order
  bool dbl = false;
  WInputs last;
};

TorchWorkload::TorchWorkload(const std::string& spec, bool useDouble, int threads)
    : impl_(std::make_unique<Impl>()) {
  Workload w = parseWorkload(spec);
  auto& t = workloadTable();
  auto it = t.find(w.def->name);
  if (it == t.end())
    WM_USER_ERROR() << "workload " << w.canonical << ": no libtorch form of '" << w.def->name
                    << "'";
  impl_->fn = it->second(w.canonical);
  for (auto& ph : w.dag.placeholders()) impl_->names.push_back(ph->name);
  impl_->dbl = useDouble;
  if (threads > 0) torch::set_num_threads(threads);
}

TorchWorkload::~TorchWorkload() = default;

bool TorchWorkload::supported(const std::string& op) {
  return workloadTable().count(op) > 0;
}

ir::NDArray TorchWorkload::run(const std::vector<ir::NDArray>& inputs) {
  WM_CHECK(inputs.size() == impl_->names.size()) << "expected " << impl_->names.size() << " inputs";
  impl_->last.clear();
  for (size_t i = 0; i < inputs.size(); ++i)
    impl_->last[impl_->names[i]] = toTorch(inputs[i], impl_->dbl);
  torch::InferenceMode guard;
  return fromTorch(impl_->fn(impl_->last).contiguous());
}

void TorchWorkload::rerun() {
  torch::InferenceMode guard;
  impl_->fn(impl_->last);
}

} // namespace wm::runtime
