// Oracle tests: every operator of the library, evaluated by the reference interpreter on
// seeded random inputs, against libtorch's own operator on the same inputs (in float64).
//  [workloads]  one table row per workload spec, several shapes each, odd sizes included;
//               a check that every built-in workload has rows here.
//  [params]     operator parameters the spec syntax does not reach (asymmetric padding,
//               count_include_pad=false, softmax along an inner axis, 1-d transposed conv, rank
//               broadcasting).
#include <wm/frontend/model.h>
#include <wm/frontend/ops.h>
#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/runtime/torch_reference.h>
#include <wm/support/strings.h>

// libtorch pulls in glog, whose CHECK would replace Catch's: include torch first, drop glog's.
#include <torch/torch.h>
#undef CHECK
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <set>

using namespace wm::ir;
namespace ops = wm::ops;

namespace {

using Inputs = std::map<std::string, torch::Tensor>;
using TorchFn = std::function<torch::Tensor(const Inputs&)>;

torch::Tensor toTorch(const NDArray& a) {
  std::vector<int64_t> shape(a.shape().begin(), a.shape().end());
  return torch::from_blob(const_cast<double*>(a.data()), shape, torch::kFloat64).clone();
}

// Evaluates dag with the interpreter and compares with fn(torch inputs).
void checkAgainstTorch(const ComputeDAG& dag, const TorchFn& fn, uint64_t seed, double tol = 1e-5) {
  auto inputs = randomInputs(dag, seed);
  Inputs byName;
  auto phs = dag.placeholders();
  for (size_t i = 0; i < phs.size(); ++i) byName[phs[i]->name] = toTorch(inputs[i]);
  NDArray got = evaluateOutputs(dag, inputs)[0];
  torch::Tensor expect = fn(byName).to(torch::kFloat64).contiguous();
  std::vector<int64_t> gotShape(got.shape().begin(), got.shape().end());
  REQUIRE(expect.sizes().vec() == gotShape);
  torch::Tensor g = toTorch(got);
  // Relative to max(1, |expected|), like maxRelativeError; the output is stored as f32.
  double err = ((g - expect).abs() / expect.abs().clamp_min(1.0)).max().item<double>();
  CHECK(err <= tol);
}

// Two or more shapes of every built-in workload, odd sizes included; the libtorch side is the
// operator table of the TorchWorkload (lib/runtime/torch_reference.cpp).
const std::vector<std::string>& workloadSpecs() {
  static const std::vector<std::string> specs{
      "gemm:M=16,N=24,K=8",
      "gemm:M=7,N=13,K=5",
      "gemm:M=1,N=33,K=17",
      "matmul:M=9,N=4,K=11",
      "matmul:M=32,N=1,K=3",
      "dense:M=8,N=12,K=16",
      "dense:M=3,N=7,K=5",
      "batch_matmul:B=3,M=8,N=6,K=4",
      "batch_matmul:B=1,M=5,N=7,K=9",
      "conv1d:N=2,C=4,L=17,K=6,R=3,pad=1",
      "conv1d:C=6,L=20,K=4,R=5,stride=2,dilation=2,groups=2",
      "conv1d:C=3,L=9,K=5,R=1",
      "conv2d:N=1,C=4,H=9,W=9,K=8,R=3,S=3,stride=1,pad=1",
      "conv2d:N=2,C=6,H=11,W=7,K=4,R=3,S=2,stride=2,pad=1,groups=2",
      "conv2d:C=5,H=13,W=13,K=3,R=3,S=3,stride=1,pad=2,dilation=2",
      "conv2d:C=3,H=8,W=10,K=7,R=1,S=1",
      "depthwise_conv2d:C=8,H=9,W=9,R=3,S=3,pad=1",
      "depthwise_conv2d:N=2,C=5,H=10,W=7,R=3,S=3,stride=2,multiplier=2",
      "depthwise_conv2d:C=3,H=12,W=12,R=5,S=5,pad=2,dilation=2",
      "conv3d:C=3,D=5,H=6,W=7,K=4,T=3,R=3,S=3,pad=1",
      "conv3d:N=2,C=4,D=6,H=6,W=5,K=2,T=2,R=3,S=1,stride=2,groups=2",
      "conv2d_transpose:C=4,H=5,W=5,K=3,R=3,S=3,stride=2,pad=1",
      "conv2d_transpose:N=2,C=3,H=4,W=6,K=4,R=4,S=4,stride=2,pad=1,output_padding=1",
      "conv2d_transpose:C=2,H=5,W=4,K=3,R=3,S=2,pad=0",
      "conv2d_transpose:C=4,H=6,W=6,K=6,R=3,S=3,stride=3,pad=2,dilation=2,groups=2",
      "max_pool2d:C=3,H=9,W=9,R=3,S=3,stride=2,pad=1",
      "max_pool2d:N=2,C=2,H=8,W=7,R=2,S=2,stride=2",
      "max_pool2d:C=1,H=5,W=6,R=3,S=2",
      "avg_pool2d:C=3,H=9,W=9,R=3,S=3,stride=2,pad=1",
      "avg_pool2d:N=2,C=2,H=8,W=7,R=2,S=2,stride=2",
      "global_avg_pool2d:C=8,H=7,W=7",
      "global_avg_pool2d:N=2,C=3,H=5,W=9",
      "bias_add:shape=2x5x3x3,axis=1",
      "bias_add:shape=7x9,axis=1",
      "bias_add:shape=4x6,axis=0",
      "relu:shape=3x17",
      "relu:shape=2x3x5x7",
      "clip:shape=5x9,min=-0.5,max=0.25",
      "clip:shape=31,min=0,max=6",
      "relu6:shape=4x11",
      "relu6:shape=1x3x5x5",
      "sigmoid:shape=6x13",
      "sigmoid:shape=97",
      "tanh:shape=6x13",
      "tanh:shape=2x2x9",
      "gelu:shape=6x13",
      "gelu:shape=3x50",
      "add:shape=4x5",
      "add:shape=2x3x4x4,shape_b=3x1x1",
      "add:shape=5x1,shape_b=1x6",
      "sub:shape=4x5",
      "sub:shape=3x7,shape_b=7",
      "mul:shape=4x5",
      "mul:shape=2x1x6,shape_b=3x1",
      "div:shape=4x5",
      "div:shape=3x7,shape_b=3x1",
      "batch_norm:shape=2x5x3x3",
      "batch_norm:shape=3x7,eps=0.001",
      "softmax:M=4,N=10",
      "softmax:M=3,N=129",
      "softmax:M=1,N=1",
      "layer_norm:M=4,N=10",
      "layer_norm:M=3,N=33,eps=0.01",
      "norm:B=2,M=5,N=7",
      "norm:M=16,N=3",
      "conv2d_bias_relu:C=4,H=9,W=9,K=8,R=3,S=3,pad=1",
      "conv2d_bias_relu:N=2,C=3,H=7,W=8,K=5,R=3,S=3,stride=2",
      "conv2d_cl_bias_relu:C=4,H=9,W=9,K=8,R=3,S=3,pad=1",
      "conv2d_cl_bias_relu:N=2,C=3,H=7,W=8,K=5,R=3,S=2,stride=2,dilation=2",
      "dense_bias_gelu:M=4,N=12,K=8",
      "dense_bias_gelu:M=3,N=5,K=7"};
  return specs;
}

// Evaluates the workload with the interpreter and compares with libtorch's operator (float64).
void checkWorkload(const std::string& spec, uint64_t seed) {
  auto w = wm::parseWorkload(spec);
  auto inputs = randomInputs(w.dag, seed);
  NDArray got = evaluateOutputs(w.dag, inputs)[0];
  NDArray expect = wm::runtime::TorchWorkload(spec, /*useDouble=*/true, 2).run(inputs);
  REQUIRE(expect.shape() == got.shape());
  double err = 0;
  for (int64_t i = 0; i < got.size(); ++i)
    err = std::max(err, std::abs(got.data()[i] - expect.data()[i]) /
                            std::max(1.0, std::abs(expect.data()[i])));
  CHECK(err <= 1e-5);
}

} // namespace

TEST_CASE("every workload matches libtorch", "[workloads]") {
  torch::set_num_threads(2);
  std::map<std::string, int> perOp;
  uint64_t seed = 1;
  for (auto& spec : workloadSpecs()) {
    INFO("workload " << spec);
    perOp[wm::parseWorkload(spec).def->name]++;
    checkWorkload(spec, seed++);
  }
  // Every built-in workload has at least two shapes in this table.
  for (auto& def : wm::workloadDefs()) {
    INFO("workload without oracle cases: " << def.name);
    CHECK(perOp[def.name] >= 2);
    CHECK(wm::runtime::TorchWorkload::supported(def.name));
  }
}

TEST_CASE("operator parameters beyond the spec syntax match libtorch", "[params]") {
  torch::set_num_threads(2);
  SECTION("asymmetric padding of a strided conv2d") {
    Tensor x = placeholder("data", {1, 3, 8, 9}), w = placeholder("weight", {4, 3, 3, 3});
    ops::ConvParams p;
    p.stride = {2, 1};
    p.padBefore = {1, 0};
    p.padAfter = {2, 1};
    p.dilation = {1, 2};
    ComputeDAG dag({ops::conv(x, w, p)});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          auto padded =
              torch::constant_pad_nd(in.at("data"), {0, 1, 1, 2}); // (W before/after, H ...)
          return torch::conv2d(padded, in.at("weight"), {}, torch::IntArrayRef{2, 1},
                               torch::IntArrayRef{0, 0}, torch::IntArrayRef{1, 2});
        },
        11);
  }
  SECTION("average pooling that does not count padding") {
    Tensor x = placeholder("data", {2, 3, 7, 6});
    ops::PoolParams pp = ops::PoolParams::uniform(2, 3, 2, 1);
    pp.countIncludePad = false;
    ComputeDAG dag({ops::pool(x, ops::PoolKind::Avg, pp)});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          return torch::avg_pool2d(in.at("data"), {3, 3}, {2, 2}, {1, 1}, false, false);
        },
        12);
  }
  SECTION("3-d max pooling with dilation and ceil mode") {
    Tensor x = placeholder("data", {1, 2, 7, 6, 8});
    ops::PoolParams pp = ops::PoolParams::uniform(3, 2, 2, 1);
    pp.dilation = {1, 2, 1};
    pp.ceilMode = true;
    ComputeDAG dag({ops::pool(x, ops::PoolKind::Max, pp)});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          return torch::max_pool3d(in.at("data"), {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {1, 2, 1}, true);
        },
        21);
  }
  SECTION("1-d average pooling with ceil mode, padding counted") {
    Tensor x = placeholder("data", {2, 3, 10});
    ops::PoolParams pp = ops::PoolParams::uniform(1, 3, 2, 1);
    pp.ceilMode = true;
    ComputeDAG dag({ops::pool(x, ops::PoolKind::Avg, pp)});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          return torch::avg_pool1d(in.at("data"), {3}, {2}, {1}, true, true);
        },
        22);
  }
  SECTION("global max pooling of a 3-d input") {
    Tensor x = placeholder("data", {2, 3, 4, 5, 2});
    ComputeDAG dag({ops::globalPool(x, ops::PoolKind::Max)});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          return torch::amax(in.at("data"), {2, 3, 4}, true);
        },
        23);
  }
  SECTION("reflect and edge padding, and cropping") {
    Tensor x = placeholder("data", {1, 2, 5, 6});
    ops::PadOptions reflect;
    reflect.mode = ops::PadMode::Reflect;
    ComputeDAG r({ops::pad(x, {0, 0, 2, 1}, {0, 0, 1, 3}, reflect)});
    checkAgainstTorch(
        r,
        [](const Inputs& in) {
          return torch::reflection_pad2d(in.at("data"), {1, 3, 2, 1});
        },
        24);
    ops::PadOptions edge;
    edge.mode = ops::PadMode::Edge;
    ComputeDAG e({ops::pad(x, {0, 0, 2, 1}, {0, 0, 1, 3}, edge)});
    checkAgainstTorch(
        e,
        [](const Inputs& in) {
          return torch::replication_pad2d(in.at("data"), {1, 3, 2, 1});
        },
        25);
    ComputeDAG c({ops::pad(x, {0, 0, -1, 2}, {0, 0, 1, -2}, ops::PadOptions{})});
    checkAgainstTorch(
        c,
        [](const Inputs& in) {
          return torch::constant_pad_nd(in.at("data"), {2, -2, -1, 1});
        },
        26);
  }
  SECTION("layer norm over the last two axes with a broadcast scale and no bias") {
    Tensor x = placeholder("data", {3, 4, 5}), g = placeholder("scale", {5});
    ComputeDAG dag({ops::layerNorm(x, 1, g, std::nullopt, 1e-5, false).y});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          return torch::layer_norm(in.at("data"), {4, 5},
                                   in.at("scale").expand({4, 5}).contiguous(), {}, 1e-5);
        },
        27);
  }
  SECTION("clip by a constant and a tensor bound") {
    Tensor x = placeholder("data", {4, 6}), hi = placeholder("hi", {1});
    ComputeDAG dag(
        {ops::clip(x, ops::ClipBound{-0.25, std::nullopt}, ops::ClipBound{std::nullopt, hi})});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          return torch::minimum(torch::clamp_min(in.at("data"), -0.25), in.at("hi"));
        },
        28);
  }
  SECTION("softmax along an inner axis of a 3-d tensor") {
    Tensor x = placeholder("data", {3, 5, 4});
    ComputeDAG dag({ops::softmax(x, 1)});
    checkAgainstTorch(
        dag, [](const Inputs& in) { return torch::softmax(in.at("data"), 1); }, 13);
  }
  SECTION("layer norm of a 3-d tensor") {
    Tensor x = placeholder("data", {2, 3, 8}), g = placeholder("gamma", {8}),
           b = placeholder("beta", {8});
    ComputeDAG dag({ops::layerNorm(x, g, b, 1e-5)});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          return torch::layer_norm(in.at("data"), {8}, in.at("gamma"), in.at("beta"), 1e-5);
        },
        14);
  }
  SECTION("1-d transposed convolution with stride and output padding") {
    Tensor x = placeholder("data", {1, 4, 7}), w = placeholder("weight", {4, 2, 3});
    ComputeDAG dag({ops::convTranspose(x, w, ops::ConvParams::uniform(1, 3, 1, 1), {2})});
    checkAgainstTorch(
        dag,
        [](const Inputs& in) {
          return torch::conv_transpose1d(in.at("data"), in.at("weight"), {}, 3, 1, 2);
        },
        15);
  }
  SECTION("broadcasting a rank-1 tensor against a rank-4 one") {
    Tensor a = placeholder("a", {6}), b = placeholder("b", {2, 3, 1, 6});
    ComputeDAG dag({ops::mul(a, b)});
    checkAgainstTorch(
        dag, [](const Inputs& in) { return in.at("a") * in.at("b"); }, 16);
  }
}

TEST_CASE("the libtorch reference executor runs every op the ONNX converters accept",
          "[reference]") {
  auto ref = wm::runtime::TorchReference::supportedOps();
  std::set<std::string> have(ref.begin(), ref.end());
  auto ops = wm::frontend::supportedOnnxOps();
  REQUIRE(ops.size() >= 50);
  for (auto& op : ops) {
    INFO("op " << op);
    CHECK(have.count(op) == 1);
  }
}
