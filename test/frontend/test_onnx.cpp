// Unit tests of the ONNX frontend below the loader: program building (constant folding, views,
// batch-norm folding, shape propagation), the fusion rules, task deduplication and the error
// messages. Graphs are built directly as frontend::Graph (the loader itself is covered by the
// node tests and the CLI tests on generated models).
#include <wm/frontend/model.h>
#include <wm/frontend/ops.h>
#include <wm/ir/interpreter.h>
#include <wm/support/error.h>
#include <wm/support/rng.h>

#include <catch2/catch.hpp>

#include <numeric>

using namespace wm;
using namespace wm::frontend;

namespace {

struct GraphBuilder {
  Graph g;
  Rng rng{7};
  GraphBuilder() {
    g.path = "test.onnx";
    g.opset = 13;
  }
  void input(const std::string& name, ir::Shape shape, ir::DType t = ir::DType::F32) {
    g.inputs.push_back(name);
    g.values[name] = ValueInfo{t, true, shape, true};
  }
  ir::NDArray weight(const std::string& name, ir::Shape shape, double lo = -1, double hi = 1) {
    auto a = ir::NDArray::random(ir::DType::F32, shape, rng, lo, hi);
    g.initializers[name] = a;
    return a;
  }
  void ints(const std::string& name, std::vector<int64_t> v) {
    ir::NDArray a(ir::DType::I64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) a.set(static_cast<int64_t>(i), static_cast<double>(v[i]));
    g.initializers[name] = a;
  }
  Node& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
    Node n;
    n.op = op;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    g.nodes.push_back(n);
    return g.nodes.back();
  }
  static Attribute intsAttr(std::vector<int64_t> v) {
    Attribute a;
    a.kind = Attribute::Kind::Ints;
    a.ints = std::move(v);
    return a;
  }
  static Attribute intAttr(int64_t v) {
    Attribute a;
    a.kind = Attribute::Kind::Int;
    a.i = v;
    return a;
  }
  void output(const std::string& name) { g.outputs.push_back(name); }
};

std::string errorOf(const Graph& g) {
  try {
    planModel(buildProgram(g));
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> groupOps(const ModelPlan& plan) {
  std::vector<std::string> r;
  for (auto& gr : plan.groups) r.push_back(gr.ops);
  return r;
}

/// Evaluates every group of the plan with the reference interpreter (the executor's job,
/// without codegen): values by id.
std::map<int, ir::NDArray> interpretPlan(const Program& p, const ModelPlan& plan,
                                         const std::vector<ir::NDArray>& inputs) {
  std::map<int, ir::NDArray> vals;
  for (size_t i = 0; i < p.inputs.size(); ++i) vals[p.inputs[i]] = inputs[i];
  for (size_t v = 0; v < p.values.size(); ++v)
    if (p.values[v].constant) vals[static_cast<int>(v)] = *p.values[v].constant;
  auto get = [&](int v) {
    ir::NDArray a = vals.at(p.root(v));
    ir::NDArray r(p.values[v].dtype, p.values[v].shape);
    r.values() = a.values();
    return r;
  };
  for (auto& gr : plan.groups) {
    std::vector<ir::NDArray> args;
    for (int v : gr.inputs) args.push_back(get(v));
    vals[gr.output] = ir::evaluateOutputs(plan.tasks[gr.task].dag, args).at(0);
  }
  std::map<int, ir::NDArray> outs;
  for (int v : p.outputs) outs[v] = get(v);
  return outs;
}

} // namespace

TEST_CASE("conv + batch norm + relu: the batch norm folds into the conv and the relu fuses",
          "[onnx]") {
  GraphBuilder b;
  b.input("x", {1, 3, 8, 8});
  auto w = b.weight("w", {4, 3, 3, 3});
  auto gamma = b.weight("gamma", {4}), beta = b.weight("beta", {4}), mean = b.weight("mean", {4});
  auto var = b.weight("var", {4}, 0.5, 1.5);
  b.node("Conv", {"x", "w"}, {"c"}).attrs["pads"] = GraphBuilder::intsAttr({1, 1, 1, 1});
  b.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"});
  b.node("Relu", {"n"}, {"y"});
  b.output("y");
  Program p = buildProgram(b.g);
  CHECK(p.numBatchNormsFolded == 1);
  ModelPlan plan = planModel(p);
  REQUIRE(groupOps(plan) == std::vector<std::string>{"Conv+Relu"});

  // numerically the unfolded computation
  Rng rng(3);
  auto x = ir::NDArray::random(ir::DType::F32, {1, 3, 8, 8}, rng);
  auto px = ir::placeholder("x", {1, 3, 8, 8}), pw = ir::placeholder("w", {4, 3, 3, 3});
  auto pg = ir::placeholder("g", {4}), pb = ir::placeholder("b", {4}),
       pm = ir::placeholder("m", {4});
  auto pv = ir::placeholder("v", {4}, ir::DType::F32, {0.5, 1.5});
  auto y = ops::relu(ops::batchNorm(ops::conv(px, pw, ops::ConvParams::uniform(2, 1, 1, 1)), pg, pb,
                                    pm, pv, 1e-5));
  ir::ComputeDAG ref({y});
  std::map<const ir::OperationNode*, ir::NDArray> data{{px.get(), x},     {pw.get(), w},
                                                       {pg.get(), gamma}, {pb.get(), beta},
                                                       {pm.get(), mean},  {pv.get(), var}};
  std::vector<ir::NDArray> args;
  for (auto& ph : ref.placeholders()) args.push_back(data.at(ph.get()));
  auto want = ir::evaluateOutputs(ref, args).at(0);
  auto got = interpretPlan(p, plan, {x}).at(p.outputs[0]);
  CHECK(ir::maxRelativeError(got, want) < 1e-5);
}

TEST_CASE("Gemm with transB and a constant B: B is stored transposed and the result is unchanged",
          "[onnx]") {
  GraphBuilder b;
  b.input("x", {3, 5});
  auto w = b.weight("w", {4, 5}); // N x K, read transposed
  auto bias = b.weight("bias", {4});
  b.node("Gemm", {"x", "w", "bias"}, {"y"}).attrs["transB"] = GraphBuilder::intAttr(1);
  b.input("z", {4, 5});
  b.node("Gemm", {"x", "z"}, {"y2"}).attrs["transB"] = GraphBuilder::intAttr(1); // not constant
  b.output("y");
  b.output("y2");
  Program p = buildProgram(b.g);
  REQUIRE(p.numWeightsTransposed == 1);
  const PNode& gemm = p.nodes.at(0);
  CHECK(gemm.node.attrs.at("transB").i == 0);
  const PValue& wt = p.values.at(gemm.inputs.at(1));
  REQUIRE(wt.constant);
  CHECK(wt.shape == ir::Shape{5, 4});
  CHECK(wt.constant->values()[1 * 4 + 2] == w.values()[2 * 5 + 1]); // wt[k=1][n=2] = w[2][1]
  CHECK(p.nodes.at(1).node.attrs.at("transB").i == 1);

  Rng rng(5);
  auto x = ir::NDArray::random(ir::DType::F32, {3, 5}, rng);
  auto z = ir::NDArray::random(ir::DType::F32, {4, 5}, rng);
  ModelPlan plan = planModel(p);
  auto got = interpretPlan(p, plan, {x, z});
  ir::NDArray want(ir::DType::F32, {3, 4}), want2(ir::DType::F32, {3, 4});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t n = 0; n < 4; ++n) {
      double s = bias.values()[n], s2 = 0;
      for (int64_t k = 0; k < 5; ++k) {
        s += x.values()[i * 5 + k] * w.values()[n * 5 + k];
        s2 += x.values()[i * 5 + k] * z.values()[n * 5 + k];
      }
      want.set(i * 4 + n, s);
      want2.set(i * 4 + n, s2);
    }
  CHECK(ir::maxRelativeError(got.at(p.outputs[0]), want) < 1e-5);
  CHECK(ir::maxRelativeError(got.at(p.outputs[1]), want2) < 1e-5);
}

TEST_CASE("a constant MatMul/Gemm weight is packed in column blocks, and the result is unchanged",
          "[onnx]") {
  GraphBuilder b;
  b.input("x", {1, 7, 24});
  b.input("x2", {5, 24});
  auto w = b.weight("w", {24, 48});   // K x N: packed [3, 24, 16]
  auto w2 = b.weight("w2", {24, 32}); // Gemm with a bias: packed [2, 24, 16]
  auto bias = b.weight("bias", {32});
  b.weight("w3", {24, 40}); // 40 columns: no whole blocks, ONNX's layout
  b.input("z", {24, 48});   // not constant
  b.node("MatMul", {"x", "w"}, {"y"});
  b.node("Gemm", {"x2", "w2", "bias"}, {"y2"});
  b.node("MatMul", {"x", "w3"}, {"y3"});
  b.node("MatMul", {"x", "z"}, {"y4"});
  for (const char* o : {"y", "y2", "y3", "y4"}) b.output(o);
  Program p = buildProgram(b.g);
  REQUIRE(p.numWeightsPacked == 2);
  REQUIRE(p.nodes.size() == 4);
  CHECK(p.nodes[0].node.weightBlock == kWeightBlock);
  CHECK(p.nodes[1].node.weightBlock == kWeightBlock);
  CHECK(p.nodes[2].node.weightBlock == 0);
  CHECK(p.nodes[3].node.weightBlock == 0);
  const PValue& wp = p.values.at(p.nodes[0].inputs.at(1));
  REQUIRE(wp.constant);
  CHECK(wp.shape == ir::Shape{3, 24, 16});
  // wp[n / 16 = 2][k = 5][n % 16 = 3] = w[k = 5][n = 35]
  CHECK(wp.constant->values()[(2 * 24 + 5) * 16 + 3] == w.values()[5 * 48 + 35]);

  Rng rng(4);
  auto x = ir::NDArray::random(ir::DType::F32, {1, 7, 24}, rng);
  auto x2 = ir::NDArray::random(ir::DType::F32, {5, 24}, rng);
  auto z = ir::NDArray::random(ir::DType::F32, {24, 48}, rng);
  ModelPlan plan = planModel(p);
  auto got = interpretPlan(p, plan, {x, x2, z});
  ir::NDArray want(ir::DType::F32, {1, 7, 48}), want2(ir::DType::F32, {5, 32});
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t n = 0; n < 48; ++n) {
      double s = 0;
      for (int64_t k = 0; k < 24; ++k) s += x.values()[i * 24 + k] * w.values()[k * 48 + n];
      want.set(i * 48 + n, s);
    }
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t n = 0; n < 32; ++n) {
      double s = bias.values()[n];
      for (int64_t k = 0; k < 24; ++k) s += x2.values()[i * 24 + k] * w2.values()[k * 32 + n];
      want2.set(i * 32 + n, s);
    }
  CHECK(ir::maxRelativeError(got.at(p.outputs[0]), want) < 1e-5);
  CHECK(ir::maxRelativeError(got.at(p.outputs[1]), want2) < 1e-5);
}

TEST_CASE("a constant Conv weight is stored channels-last where the output rows are not whole "
          "vectors, and the result is unchanged",
          "[onnx]") {
  GraphBuilder b;
  b.input("x", {1, 64, 9, 9});
  b.input("x16", {1, 64, 16, 16});
  auto w = b.weight("w", {16, 64, 3, 3});
  auto bias = b.weight("bias", {16});
  b.weight("w8", {8, 64, 3, 3});
  b.weight("w1", {16, 64, 1, 1});
  {
    Node& c = b.node("Conv", {"x", "w", "bias"}, {"c"}); // 5x5 output rows: channels-last
    c.attrs["pads"] = GraphBuilder::intsAttr({1, 1, 1, 1});
    c.attrs["strides"] = GraphBuilder::intsAttr({2, 2});
  }
  b.node("Relu", {"c"}, {"y"});
  // ONNX's layout stays for rows of 16 at stride 1, for 8 output channels (no whole vector)
  // and for a 1x1 conv over 64 channels (64 multiply-adds per output: the read back to NCHW
  // would cost more than the vectors gain)
  b.node("Conv", {"x16", "w"}, {"y16"}).attrs["pads"] = GraphBuilder::intsAttr({1, 1, 1, 1});
  b.node("Conv", {"x", "w8"}, {"y8"});
  b.node("Conv", {"x", "w1"}, {"y1"});
  for (const char* o : {"y", "y16", "y8", "y1"}) b.output(o);
  Program p = buildProgram(b.g);
  REQUIRE(p.numConvWeightsChannelsLast == 1);
  REQUIRE(p.nodes.size() == 5);
  const PNode& conv = p.nodes[0];
  CHECK(conv.node.weightChannelsLast);
  for (size_t i = 2; i < 5; ++i) CHECK(!p.nodes[i].node.weightChannelsLast);
  const PValue& wc = p.values.at(conv.inputs.at(1));
  REQUIRE(wc.constant);
  CHECK(wc.shape == ir::Shape{64, 3, 3, 16});
  // wc[c=2][r=1][s=0][k=11] = w[k=11][c=2][r=1][s=0]
  CHECK(wc.constant->values()[((2 * 3 + 1) * 3 + 0) * 16 + 11] ==
        w.values()[((11 * 64 + 2) * 3 + 1) * 3 + 0]);
  ModelPlan plan = planModel(p);
  REQUIRE(groupOps(plan) == std::vector<std::string>{"Conv+Relu", "Conv", "Conv", "Conv"});
  // the channels-last task computes [N, X, Y, K] and reads it back through a layout stage
  int layoutStages = 0;
  for (auto& op : plan.tasks[plan.groups[0].task].dag.ops())
    layoutStages += op->tag == ir::kLayoutTag;
  CHECK(layoutStages == 1);

  // numerically the ONNX layout's results
  Rng rng(9);
  auto x = ir::NDArray::random(ir::DType::F32, {1, 64, 9, 9}, rng);
  auto x16 = ir::NDArray::random(ir::DType::F32, {1, 64, 16, 16}, rng);
  auto got = interpretPlan(p, plan, {x, x16});
  auto px = ir::placeholder("x", {1, 64, 9, 9}), pw = ir::placeholder("w", {16, 64, 3, 3});
  auto pb = ir::placeholder("b", {16});
  ir::ComputeDAG ref(
      {ops::relu(ops::biasAdd(ops::conv(px, pw, ops::ConvParams::uniform(2, 2, 1, 1)), pb, 1))});
  std::map<const ir::OperationNode*, ir::NDArray> data{
      {px.get(), x}, {pw.get(), w}, {pb.get(), bias}};
  std::vector<ir::NDArray> args;
  for (auto& ph : ref.placeholders()) args.push_back(data.at(ph.get()));
  auto want = ir::evaluateOutputs(ref, args).at(0);
  CHECK(got.at(p.outputs[0]).shape() == want.shape());
  CHECK(ir::maxRelativeError(got.at(p.outputs[0]), want) < 1e-5);
}

TEST_CASE("a pointwise Conv runs over its flattened plane, its weight rows padded where they "
          "alias, and the result is unchanged",
          "[onnx]") {
  GraphBuilder b;
  b.input("x", {1, 512, 2, 3});
  b.input("x2", {1, 16, 3, 5});
  b.input("x3", {1, 512, 5});
  auto w = b.weight("w", {256, 512, 1, 1}); // rows of 2 KB: padded
  auto bias = b.weight("bias", {256});
  auto w2 = b.weight("w2", {24, 16, 1, 1}); // flat, ONNX's layout
  auto w3 = b.weight("w3", {256, 512, 1});  // one spatial dimension: channels-last, unpadded
  b.node("Conv", {"x", "w", "bias"}, {"c"});
  b.node("Relu", {"c"}, {"y"});
  b.node("Conv", {"x2", "w2"}, {"y2"});
  b.node("Conv", {"x3", "w3"}, {"y3"});
  for (const char* o : {"y", "y2", "y3"}) b.output(o);
  Program p = buildProgram(b.g);
  CHECK(p.numConvWeightsChannelsLast == 1); // the 1-D one
  REQUIRE(p.numConvWeightsPadded == 1);
  REQUIRE(p.nodes.size() == 4);
  CHECK(p.nodes[0].node.weightRowPad == kWeightRowPad);
  CHECK(p.nodes[2].node.weightRowPad == 0);
  CHECK(p.nodes[3].node.weightRowPad == 0);
  const PValue& wp = p.values.at(p.nodes[0].inputs.at(1));
  REQUIRE(wp.constant);
  CHECK(wp.shape == ir::Shape{256, 512 + kWeightRowPad, 1, 1});
  const int64_t row = 512 + kWeightRowPad;
  CHECK(wp.constant->values()[7 * row + 300] == w.values()[7 * 512 + 300]);
  CHECK(wp.constant->values()[7 * row + 512] == 0.0); // the pad
  ModelPlan plan = planModel(p);
  REQUIRE(groupOps(plan) == std::vector<std::string>{"Conv+Relu", "Conv", "Conv"});
  // the 2-D ones reduce over one flattened spatial axis, [1, K, X * Y]; the 1-D one [1, X, K]
  std::vector<ir::Shape> reductions;
  for (const auto& g : plan.groups)
    for (auto& op : plan.tasks[g.task].dag.ops())
      if (op->hasReduction()) reductions.push_back(op->shape);
  CHECK(reductions == std::vector<ir::Shape>{{1, 256, 6}, {1, 24, 15}, {1, 5, 256}});

  Rng rng(12);
  auto x = ir::NDArray::random(ir::DType::F32, {1, 512, 2, 3}, rng);
  auto x2 = ir::NDArray::random(ir::DType::F32, {1, 16, 3, 5}, rng);
  auto x3 = ir::NDArray::random(ir::DType::F32, {1, 512, 5}, rng);
  auto got = interpretPlan(p, plan, {x, x2, x3});
  auto direct = [](const ir::NDArray& in, const ir::NDArray& wt, const ir::NDArray* b, bool relu,
                   int64_t C, int64_t K, int64_t plane) {
    ir::NDArray out(ir::DType::F32, {1, K, plane});
    for (int64_t k = 0; k < K; ++k)
      for (int64_t f = 0; f < plane; ++f) {
        double s = b ? b->values()[k] : 0.0;
        for (int64_t c = 0; c < C; ++c) s += in.values()[c * plane + f] * wt.values()[k * C + c];
        out.set(k * plane + f, relu ? std::max(0.0, s) : s);
      }
    return out;
  };
  auto want = direct(x, w, &bias, true, 512, 256, 6);
  auto want2 = direct(x2, w2, nullptr, false, 16, 24, 15);
  auto want3 = direct(x3, w3, nullptr, false, 512, 256, 5);
  for (auto [out, ref] : {std::pair{0, &want}, std::pair{1, &want2}, std::pair{2, &want3}}) {
    INFO("output " << out);
    const ir::NDArray& g = got.at(p.outputs[out]);
    REQUIRE(g.size() == ref->size());
    double err = 0;
    for (int64_t i = 0; i < ref->size(); ++i)
      err = std::max(err, std::abs(g.values()[i] - ref->values()[i]));
    CHECK(err < 1e-4);
  }
}

TEST_CASE("Shape/Gather/Unsqueeze/Concat chains fold; Reshape and Flatten are views, not kernels",
          "[onnx]") {
  GraphBuilder b;
  b.input("x", {2, 3, 4});
  b.ints("zero", {0});
  b.ints("minus1", {-1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"d0"}).attrs["axis"] = GraphBuilder::intAttr(0);
  b.node("Concat", {"d0", "minus1"}, {"shape"}).attrs["axis"] = GraphBuilder::intAttr(0);
  b.node("Relu", {"x"}, {"r"});
  b.node("Reshape", {"r", "shape"}, {"flat"});
  b.node("Exp", {"flat"}, {"y"});
  b.output("y");
  Program p = buildProgram(b.g);
  CHECK(p.numFolded == 3);
  CHECK(p.numViews == 1);
  REQUIRE(p.values[p.outputs[0]].shape == ir::Shape{2, 12});
  ModelPlan plan = planModel(p);
  // the view keeps relu's buffer: relu and exp are two kernels, the reshape none
  CHECK(groupOps(plan) == std::vector<std::string>{"Relu", "Exp"});
  Rng rng(1);
  auto x = ir::NDArray::random(ir::DType::F32, {2, 3, 4}, rng);
  auto got = interpretPlan(p, plan, {x}).at(p.outputs[0]);
  for (int64_t i = 0; i < x.size(); ++i)
    CHECK(got.values()[i] == Approx(std::exp(std::max(0.0, x.values()[i]))));
}

TEST_CASE("identical subgraphs are one task; weights sum to the number of groups", "[onnx]") {
  GraphBuilder b;
  b.input("x", {1, 8, 6, 6});
  b.weight("w1", {8, 8, 3, 3});
  b.weight("w2", {8, 8, 3, 3});
  b.weight("w3", {8, 8, 1, 1});
  for (auto [w, in, c, out] :
       {std::tuple{"w1", "x", "c1", "r1"}, std::tuple{"w2", "r1", "c2", "r2"}}) {
    b.node("Conv", {in, w}, {c}).attrs["pads"] = GraphBuilder::intsAttr({1, 1, 1, 1});
    b.node("Relu", {c}, {out});
  }
  b.node("Conv", {"r2", "w3"}, {"y"});
  b.output("y");
  ModelPlan plan = planModel(buildProgram(b.g));
  REQUIRE(plan.groups.size() == 3);
  REQUIRE(plan.tasks.size() == 2);
  CHECK(plan.tasks[0].weight == 2);
  CHECK(plan.tasks[0].ops == "Conv+Relu");
  int sum = 0;
  for (auto& t : plan.tasks) sum += t.weight;
  CHECK(sum == static_cast<int>(plan.groups.size()));
  CHECK(plan.groups[0].task == plan.groups[1].task);
  CHECK(plan.groups[0].inputs != plan.groups[1].inputs); // same kernel, other buffers
}

TEST_CASE("fusion rules: injective producers join a matmul, element-wise ones do not", "[onnx]") {
  for (const char* producer : {"Transpose", "Exp"}) {
    GraphBuilder b;
    b.input("a", {16, 16});
    b.weight("w", {16, 16});
    b.node(producer, {"a"}, {"t"});
    b.node("MatMul", {"t", "w"}, {"y"});
    b.output("y");
    ModelPlan plan = planModel(buildProgram(b.g));
    if (std::string(producer) == "Transpose")
      CHECK(groupOps(plan) == std::vector<std::string>{"Transpose+MatMul"});
    else
      CHECK(groupOps(plan) == std::vector<std::string>{"Exp", "MatMul"});
  }
}

TEST_CASE(
    "fusion rules: element-wise producers join a reduction; a value read twice stays a buffer",
    "[onnx]") {
  GraphBuilder b;
  b.input("x", {4, 32});
  b.node("Exp", {"x"}, {"e"});
  b.node("ReduceSum", {"e"}, {"s"});
  b.weight("w", {32, 8});
  b.node("Relu", {"x"}, {"r"}); // read by a matmul and a reduction: computed once
  b.node("MatMul", {"r", "w"}, {"y"});
  b.node("ReduceMax", {"r"}, {"z"});
  b.output("s");
  b.output("y");
  b.output("z");
  ModelPlan plan = planModel(buildProgram(b.g));
  CHECK(groupOps(plan) == std::vector<std::string>{"Exp+ReduceSum", "Relu", "MatMul", "ReduceMax"});
}

TEST_CASE("fusion rules: gelu's element-wise diamond joins the matmul before it", "[onnx]") {
  GraphBuilder b;
  b.input("x", {8, 16});
  b.weight("w", {16, 32});
  b.g.initializers["sqrt2"] = ir::NDArray(ir::DType::F32, {});
  b.g.initializers["sqrt2"].set(0, std::sqrt(2.0));
  b.g.initializers["one"] = ir::NDArray(ir::DType::F32, {});
  b.g.initializers["one"].set(0, 1.0);
  b.node("MatMul", {"x", "w"}, {"m"});
  b.node("Div", {"m", "sqrt2"}, {"d"});
  b.node("Erf", {"d"}, {"e"});
  b.node("Add", {"e", "one"}, {"a"});
  b.node("Mul", {"m", "a"}, {"y"});
  b.output("y");
  Program p = buildProgram(b.g);
  ModelPlan plan = planModel(p);
  REQUIRE(groupOps(plan) == std::vector<std::string>{"MatMul+Div+Erf+Add+Mul"});
  Rng rng(5);
  auto x = ir::NDArray::random(ir::DType::F32, {8, 16}, rng);
  auto got = interpretPlan(p, plan, {x}).at(p.outputs[0]);
  const auto& w = b.g.initializers["w"];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 32; ++j) {
      double m = 0;
      for (int k = 0; k < 16; ++k) m += x.values()[i * 16 + k] * w.values()[k * 32 + j];
      CHECK(got.values()[i * 32 + j] ==
            Approx(m * (1 + std::erf(m / std::sqrt(2.0)))).margin(1e-5));
    }
}

TEST_CASE("unsupported ops and attributes are user errors naming node, op and opset", "[onnx]") {
  {
    GraphBuilder b;
    b.input("x", {4});
    b.node("Acos", {"x"}, {"y"});
    b.output("y");
    std::string e = errorOf(b.g);
    CHECK(e.find("Acos_0") != std::string::npos);
    CHECK(e.find("op Acos is not supported") != std::string::npos);
    CHECK(e.find("opset 13") != std::string::npos);
  }
  {
    GraphBuilder b;
    b.input("x", {4});
    b.node("Relu", {"x"}, {"y"}).attrs["alpha"] = GraphBuilder::intAttr(1);
    b.output("y");
    CHECK(errorOf(b.g).find("attribute 'alpha' is not supported") != std::string::npos);
  }
  {
    GraphBuilder b;
    b.input("x", {4, 4});
    b.input("s", {2}, ir::DType::I64);
    b.node("Reshape", {"x", "s"}, {"y"});
    b.output("y");
    CHECK(errorOf(b.g).find("input 'shape' must be a constant") != std::string::npos);
  }
  {
    GraphBuilder b;
    b.input("x", {1, 3, 8, 8});
    b.weight("w", {4, 2, 3, 3});
    b.node("Conv", {"x", "w"}, {"y"});
    b.output("y");
    CHECK(errorOf(b.g).find("Conv_0") != std::string::npos);
  }
}

TEST_CASE("onnx task specs name a path and a key", "[onnx]") {
  CHECK(onnxTaskSpec("/m/model.onnx", "0123456789abcdef") == "onnx:/m/model.onnx#0123456789abcdef");
  CHECK_THROWS_AS(onnxTaskDag("gemm:M=1"), UserError);
  CHECK_THROWS_AS(onnxTaskDag("onnx:/nonexistent/model.onnx#0123"), UserError);
}
