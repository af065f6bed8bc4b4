// buildProgram: ONNX graph -> Program (constants folded, shapes static, views as aliases,
// batch norm folded into convs).
#include "convert.h"

#include <wm/frontend/model.h>
#include <wm/ir/printer.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>

#include <cmath>
#include <map>
#include <unordered_map>

namespace wm::frontend {

using namespace wm::ir;

int64_t PValue::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (!checkedMul(n, d, &n)) return INT64_MAX; // declared shapes are input; refused later
  return n;
}

namespace {

/// Nodes whose inputs are all constant are folded when the result is at most this large.
constexpr int64_t kMaxFoldElements = int64_t(1) << 24;

NDArray constantFromAttr(const Node& n, int opset) {
  auto fail = [&](const std::string& m) -> void {
    WM_USER_ERROR() << "node '" << n.name << "' (Constant, opset " << opset << "): " << m;
  };
  if (n.attrs.size() != 1) fail("needs exactly one value attribute");
  const auto& [name, a] = *n.attrs.begin();
  if (name == "value") {
    if (a.kind != Attribute::Kind::Tensor) fail("'value' must be a tensor");
    return *a.tensor;
  }
  if (name == "value_float" || name == "value_int") {
    NDArray r(name == "value_float" ? DType::F32 : DType::I64, {});
    r.set(0, name == "value_float" ? a.f : static_cast<double>(a.i));
    return r;
  }
  if (name == "value_floats" || name == "value_ints") {
    bool f = name == "value_floats";
    size_t k = f ? a.floats.size() : a.ints.size();
    NDArray r(f ? DType::F32 : DType::I64, {static_cast<int64_t>(k)});
    for (size_t i = 0; i < k; ++i)
      r.set(static_cast<int64_t>(i), f ? a.floats[i] : static_cast<double>(a.ints[i]));
    return r;
  }
  fail("attribute '" + name + "' is not supported");
  return {};
}

std::string shapeText(const Shape& s) {
  return typeString(DType::F32, s).substr(3);
}

class Builder {
public:
  explicit Builder(const Graph& g) : g_(g) {
    p_.path = g.path;
    p_.opset = g.opset;
    p_.numOnnxNodes = static_cast<int>(g.nodes.size());
  }

  Program build() {
    for (auto& [name, arr] : g_.initializers) {
      PValue v;
      v.name = name;
      v.dtype = arr.dtype();
      v.shape = arr.shape();
      v.constant = arr;
      add(std::move(v));
    }
    for (auto& name : g_.inputs) {
      auto it = g_.values.find(name);
      if (it == g_.values.end() || !it->second.typeKnown || !it->second.shapeKnown)
        WM_USER_ERROR() << g_.path << ": graph input '" << name << "' has no tensor type and shape";
      for (int64_t d : it->second.shape)
        if (d <= 0)
          WM_USER_ERROR()
              << g_.path << ": graph input '" << name << "' has a symbolic or empty dimension ("
              << "wmtune compiles static shapes; export the model with fixed input sizes)";
      PValue v;
      v.name = name;
      v.dtype = it->second.dtype;
      v.shape = it->second.shape;
      v.isInput = true;
      p_.inputs.push_back(add(std::move(v)));
    }
    for (auto& n : g_.nodes) node(n);
    for (auto& name : g_.outputs) {
      int v = id(name, "graph output");
      p_.values[v].isOutput = true;
      p_.outputs.push_back(v);
    }
    foldBatchNorms();
    transposeGemmWeights();
    convWeightsChannelsLast();
    packMatMulWeights();
    return std::move(p_);
  }

private:
  int add(PValue v) {
    int i = static_cast<int>(p_.values.size());
    ids_[v.name] = i;
    p_.values.push_back(std::move(v));
    return i;
  }
  /// A new constant value (a weight stored in another layout); its id.
  int addConstant(std::string name, NDArray a) {
    PValue v;
    v.name = std::move(name);
    v.dtype = a.dtype();
    v.shape = a.shape();
    v.constant = std::move(a);
    return add(std::move(v));
  }
  int id(const std::string& name, const char* what) const {
    auto it = ids_.find(name);
    if (it == ids_.end())
      WM_USER_ERROR() << g_.path << ": " << what << " '" << name << "' is undefined";
    return it->second;
  }

  void node(const Node& n) {
    auto fail = [&](const std::string& m) {
      WM_USER_ERROR() << g_.path << ": node '" << n.name << "' (" << n.op << ", opset " << g_.opset
                      << "): " << m;
    };
    if (n.op == "Constant" && (n.domain.empty() || n.domain == "ai.onnx")) {
      PValue v;
      v.name = n.outputs.at(0);
      NDArray a = constantFromAttr(n, g_.opset);
      v.dtype = a.dtype();
      v.shape = a.shape();
      v.constant = std::move(a);
      add(std::move(v));
      ++p_.numFolded;
      return;
    }
    if (n.op == "Shape" && (n.domain.empty() || n.domain == "ai.onnx")) {
      if (n.inputs.empty()) fail("needs an input");
      const PValue& x = p_.values[id(n.inputs[0], "input")];
      int64_t r = static_cast<int64_t>(x.shape.size());
      int64_t start = 0, end = r;
      for (auto& [k, a] : n.attrs) {
        if (k != "start" && k != "end") fail("attribute '" + k + "' is not supported");
        int64_t val = a.i < 0 ? a.i + r : a.i;
        (k == "start" ? start : end) = std::clamp<int64_t>(val, 0, r);
      }
      PValue v;
      v.name = n.outputs.at(0);
      v.dtype = DType::I64;
      NDArray a(DType::I64, {std::max<int64_t>(0, end - start)});
      for (int64_t i = start; i < end; ++i) a.set(i - start, static_cast<double>(x.shape[i]));
      v.shape = a.shape();
      v.constant = std::move(a);
      add(std::move(v));
      ++p_.numFolded;
      return;
    }
    std::vector<ConvertInput> ins;
    std::vector<int> inIds;
    std::unordered_map<const OperationNode*, int> byPlaceholder;
    bool allConstant = true;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ConvertInput ci;
      if (n.inputs[i].empty()) {
        ins.push_back(ci);
        inIds.push_back(-1);
        continue;
      }
      int vid = id(n.inputs[i], "input");
      const PValue& v = p_.values[vid];
      bool empty = false;
      for (int64_t d : v.shape) empty |= d <= 0;
      // an empty constant (no axes, no pads) is data for the converter, never a tensor
      if (empty && !v.constant)
        fail("input '" + n.inputs[i] + "' is empty; empty tensors are not supported");
      ci.present = true;
      ci.dtype = v.dtype;
      ci.shape = v.shape;
      if (!empty) {
        ci.tensor = placeholder("in" + std::to_string(i), v.shape, v.dtype);
        byPlaceholder[ci.tensor->get()] = vid;
      }
      if (v.constant)
        ci.constant = &*v.constant;
      else
        allConstant = false;
      ins.push_back(std::move(ci));
      inIds.push_back(vid);
    }
    ConvertContext ctx(n, g_.opset, std::move(ins));
    std::vector<Tensor> outs = convertNode(ctx);
    const OpDef* def = findOpDef(n.op);
    WM_CHECK(outs.size() >= 1 && outs.size() <= n.outputs.size())
        << n.name << ": converter output count";
    for (size_t o = 0; o < outs.size(); ++o) {
      if (n.outputs[o].empty()) continue;
      checkAgainstOnnx(n, n.outputs[o], *outs[o]);
      PValue v;
      v.name = n.outputs[o];
      v.dtype = outs[o]->dtype;
      v.shape = outs[o]->shape;
      if (allConstant && v.numElements() <= kMaxFoldElements) {
        ComputeDAG dag({outs[o]});
        std::vector<NDArray> args;
        for (auto& ph : dag.placeholders())
          args.push_back(*p_.values[byPlaceholder.at(ph.get())].constant);
        v.constant = evaluateOutputs(dag, args).at(0);
        add(std::move(v));
        ++p_.numFolded;
        continue;
      }
      if (def->cls == OpClass::View && o == 0) {
        int src = inIds.at(0);
        v.aliasOf = p_.root(src);
        add(std::move(v));
        ++p_.numViews;
        continue;
      }
      PNode pn;
      pn.node = n;
      pn.outputIndex = static_cast<int>(o);
      pn.inputs = inIds;
      int vid = add(std::move(v));
      pn.output = vid;
      p_.values[vid].producer = static_cast<int>(p_.nodes.size());
      p_.nodes.push_back(std::move(pn));
    }
  }

  // Our shapes come from the converters; where ONNX's shape inference knows a static shape too,
  // the two must agree (a disagreement is a bug in a converter).
  void checkAgainstOnnx(const Node& n, const std::string& out, const OperationNode& t) {
    auto it = g_.values.find(out);
    if (it == g_.values.end() || !it->second.shapeKnown) return;
    const Shape& s = it->second.shape;
    for (int64_t d : s)
      if (d < 0) return;
    WM_CHECK(s == t.shape) << g_.path << ": node '" << n.name << "' (" << n.op << "): output '"
                           << out << "' has shape " << shapeText(t.shape) << ", ONNX infers "
                           << shapeText(s);
    if (it->second.typeKnown)
      WM_CHECK(it->second.dtype == t.dtype)
          << g_.path << ": node '" << n.name << "' (" << n.op << "): output type "
          << dtypeName(t.dtype) << ", ONNX infers " << dtypeName(it->second.dtype);
  }

  // Conv -> BatchNormalization with constant parameters and no other reader of the conv:
  // scale the conv's weights and bias instead.
  void foldBatchNorms() {
    std::vector<int> uses(p_.values.size(), 0);
    for (auto& pn : p_.nodes)
      for (int v : pn.inputs)
        if (v >= 0) ++uses[p_.root(v)];
    for (auto& v : p_.values)
      if (v.aliasOf >= 0) uses[v.aliasOf] += 2; // read through a view: keep it
    std::vector<bool> dead(p_.nodes.size(), false);
    for (size_t b = 0; b < p_.nodes.size(); ++b) {
      PNode& bn = p_.nodes[b];
      if (bn.node.op != "BatchNormalization" || bn.inputs.size() < 5) continue;
      int x = bn.inputs[0];
      if (p_.values[x].aliasOf >= 0 || p_.values[x].producer < 0 || uses[x] != 1 ||
          p_.values[x].isOutput)
        continue;
      PNode& conv = p_.nodes[p_.values[x].producer];
      if (conv.node.op != "Conv" || !p_.values[conv.inputs[1]].constant) continue;
      if (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !p_.values[conv.inputs[2]].constant)
        continue;
      bool params = true;
      for (int i = 1; i <= 4; ++i)
        params &= bn.inputs[i] >= 0 && p_.values[bn.inputs[i]].constant.has_value();
      if (!params) continue;
      double eps = 1e-5;
      if (bn.node.attrs.count("epsilon")) eps = bn.node.attrs.at("epsilon").f;
      const NDArray& w = *p_.values[conv.inputs[1]].constant;
      int64_t K = w.shape()[0], per = w.size() / K;
      const auto& gam = p_.values[bn.inputs[1]].constant->values();
      const auto& bet = p_.values[bn.inputs[2]].constant->values();
      const auto& mean = p_.values[bn.inputs[3]].constant->values();
      const auto& var = p_.values[bn.inputs[4]].constant->values();
      NDArray nw(w.dtype(), w.shape()), nb(w.dtype(), {K});
      bool hasBias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
      for (int64_t k = 0; k < K; ++k) {
        double s = gam[k] / std::sqrt(var[k] + eps);
        for (int64_t j = 0; j < per; ++j) nw.set(k * per + j, w.values()[k * per + j] * s);
        double b0 = hasBias ? p_.values[conv.inputs[2]].constant->values()[k] : 0.0;
        nb.set(k, (b0 - mean[k]) * s + bet[k]);
      }
      PValue wv, bv;
      wv.name = p_.values[conv.inputs[1]].name + ".bn_folded";
      wv.dtype = nw.dtype();
      wv.shape = nw.shape();
      wv.constant = std::move(nw);
      bv.name = bn.node.name + ".bias_folded";
      bv.dtype = nb.dtype();
      bv.shape = nb.shape();
      bv.constant = std::move(nb);
      int wid = add(std::move(wv)), bid = add(std::move(bv));
      uses.resize(p_.values.size(), 0);
      conv.inputs.resize(3);
      conv.inputs[1] = wid;
      conv.inputs[2] = bid;
      conv.output = bn.output;
      p_.values[bn.output].producer = p_.values[x].producer;
      p_.values[x].producer = -1;
      dead[b] = true;
      ++p_.numBatchNormsFolded;
    }
    if (!p_.numBatchNormsFolded) return;
    // The conv now writes the batch norm's value; it stays where it is (its inputs come before
    // it, and the value's readers come after the batch norm).
    std::vector<PNode> kept;
    for (size_t i = 0; i < p_.nodes.size(); ++i)
      if (!dead[i]) kept.push_back(std::move(p_.nodes[i]));
    p_.nodes = std::move(kept);
    for (auto& v : p_.values) v.producer = -1;
    for (size_t i = 0; i < p_.nodes.size(); ++i)
      p_.values[p_.nodes[i].output].producer = static_cast<int>(i);
  }

  // Gemm with transB and a constant B: B transposed once here, so that the kernel reads it
  // along the output's columns (contiguous vectors) instead of one column per K-row stride.
  void transposeGemmWeights() {
    for (PNode& pn : p_.nodes) {
      auto tb = pn.node.attrs.find("transB");
      if (pn.node.op != "Gemm" || tb == pn.node.attrs.end() || tb->second.i == 0 ||
          pn.inputs.size() < 2 || pn.inputs[1] < 0)
        continue;
      const PValue& b = p_.values[pn.inputs[1]];
      if (!b.constant || b.shape.size() != 2 || b.dtype != DType::F32) continue;
      int64_t N = b.shape[0], K = b.shape[1];
      const NDArray& w = *b.constant;
      NDArray t(w.dtype(), {K, N});
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) t.set(k * N + n, w.values()[n * K + k]);
      pn.inputs[1] = addConstant(b.name + ".transposed", std::move(t));
      tb->second.i = 0;
      ++p_.numWeightsTransposed;
    }
  }

  // Conv with a constant weight and group=1: the weight repacked once here, [K, C, R...] ->
  // [C, R..., K] (channels-last), so that the kernel's vector axis runs along the output
  // channels, reading whole weight vectors and broadcasting each input value, instead of
  // along the output row, where a row of 7 or 14 fills half a vector or less and a stride
  // gathers its lanes. Convs whose rows are whole vectors at stride 1 keep ONNX's layout.
  void convWeightsChannelsLast() {
    for (PNode& pn : p_.nodes) {
      if (pn.node.op != "Conv" || pn.inputs.size() < 2 || pn.inputs[1] < 0) continue;
      auto g = pn.node.attrs.find("group");
      if (g != pn.node.attrs.end() && g->second.i != 1) continue;
      const PValue& w = p_.values[pn.inputs[1]];
      const PValue& y = p_.values[pn.output];
      size_t r = w.shape.size();
      if (!w.constant || w.dtype != DType::F32 || r < 3 || y.shape.size() != r) continue;
      auto st = pn.node.attrs.find("strides");
      int64_t stride =
          st != pn.node.attrs.end() && st->second.ints.size() == r - 2 ? st->second.ints.back() : 1;
      int64_t K = w.shape[0], inner = K > 0 ? w.constant->size() / K : 0; // C * R...
      if (pointwise(pn, w.shape) && w.shape[1] <= kPointwiseMaxChannels && 2 * K >= w.shape[1]) {
        padWeightRows(pn, w);
        continue;
      }
      if (!convWantsChannelsLast(K, inner, y.shape.back(), stride)) continue;
      Shape shape(w.shape.begin() + 1, w.shape.end());
      shape.push_back(K);
      NDArray t(DType::F32, shape);
      const double* src = w.constant->data();
      double* dst = t.data();
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < inner; ++j) dst[j * K + k] = src[k * inner + j];
      pn.inputs[1] = addConstant(w.name + ".channels_last", std::move(t));
      pn.node.weightChannelsLast = true;
      ++p_.numConvWeightsChannelsLast;
    }
  }

  // A pointwise Conv: a 1 x 1 window at stride 1 without padding. ops::conv computes it over
  // its flattened plane, NCHW (its vector axis along the plane, reading the input's rows end
  // to end; the rows of its register tile are output channels), unless its weight is stored
  // channels-last, as it is over more than kPointwiseMaxChannels input channels or onto fewer
  // than half as many outputs. Measured, not derived: ResNet-50's at 56 x 56 to 7 x 7 ran
  // 1.1-2x faster flat over up to 512 channels (bottleneck expansions: 70-86 -> 98-145
  // GFLOP/s), 1.1-1.5x slower over 1024 or 2048; MobileNetV2's 384 -> 64 at 14 x 14 ran at
  // 65-75 flat, 118-163 channels-last.
  static constexpr int64_t kPointwiseMaxChannels = 512;
  static bool pointwise(const PNode& pn, const Shape& weight) {
    if (weight.size() < 4) return false; // one spatial dimension: ops::conv flattens nothing
    for (size_t d = 2; d < weight.size(); ++d)
      if (weight[d] != 1) return false;
    for (const char* a : {"strides", "pads"}) {
      auto it = pn.node.attrs.find(a);
      if (it == pn.node.attrs.end()) continue;
      for (int64_t v : it->second.ints)
        if (v != (a[0] == 's' ? 1 : 0)) return false;
    }
    return true;
  }

  // A flat pointwise Conv's weight [K, C, 1...] whose rows are a multiple of 2 KB: stored
  // [K, C + kWeightRowPad, 1...]. The rows of a register tile (14 output channels on AVX2)
  // fall in two L1 sets (of 8 ways) for C = 512 and in one for C = 1024: there the kernel read
  // its weights from L2, 35 GFLOP/s against 98 for C = 256 (and 65 with the weight
  // channels-last, [C, 1, 1, K], which put the reduction's steps 4 KB apart instead).
  void padWeightRows(PNode& pn, const PValue& w) {
    int64_t K = w.shape[0], C = w.shape[1];
    if (K < 2 || C % kWeightRowAlias) return;
    Shape shape = w.shape;
    shape[1] = C + kWeightRowPad;
    NDArray t(DType::F32, shape); // zeros
    const double* src = w.constant->data();
    double* dst = t.data();
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) dst[k * shape[1] + c] = src[k * C + c];
    pn.inputs[1] = addConstant(w.name + ".padded", std::move(t));
    pn.node.weightRowPad = kWeightRowPad;
    ++p_.numConvWeightsPadded;
  }

  // MatMul, or Gemm (transB already undone), with a constant 2-D weight B [K, N]: B stored
  // in column blocks, [N / kWeightBlock, K, kWeightBlock] (see kWeightBlock).
  void packMatMulWeights() {
    for (PNode& pn : p_.nodes) {
      bool gemm = pn.node.op == "Gemm";
      if ((pn.node.op != "MatMul" && !gemm) || pn.inputs.size() < 2 || pn.inputs[1] < 0) continue;
      if (gemm) {
        auto ta = pn.node.attrs.find("transA"), tb = pn.node.attrs.find("transB");
        if ((ta != pn.node.attrs.end() && ta->second.i != 0) ||
            (tb != pn.node.attrs.end() && tb->second.i != 0))
          continue;
      }
      const PValue& b = p_.values[pn.inputs[1]];
      if (!b.constant || b.shape.size() != 2 || b.dtype != DType::F32) continue;
      int64_t K = b.shape[0], N = b.shape[1];
      if (!matmulWantsPacked(K, N)) continue;
      const int64_t blk = kWeightBlock;
      NDArray t(DType::F32, {N / blk, K, blk});
      const double* src = b.constant->data();
      double* dst = t.data();
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) dst[(n / blk * K + k) * blk + n % blk] = src[k * N + n];
      pn.inputs[1] = addConstant(b.name + ".packed", std::move(t));
      pn.node.weightBlock = blk;
      ++p_.numWeightsPacked;
    }
  }

  const Graph& g_;
  Program p_;
  std::map<std::string, int> ids_;
};

} // namespace

bool convWantsChannelsLast(int64_t K, int64_t reduction, int64_t width, int64_t stride) {
  constexpr int64_t kLanes = 16, kMinReduction = 256;
  return K > 0 && K % kLanes == 0 && reduction >= kMinReduction &&
         (stride != 1 || width % kLanes != 0);
}

bool matmulWantsPacked(int64_t K, int64_t N) {
  return K >= kWeightBlock && N >= 2 * kWeightBlock && N % kWeightBlock == 0;
}

Program buildProgram(const Graph& g) {
  return Builder(g).build();
}

} // namespace wm::frontend
