// Unit tests of ComputeDAG: order, FLOPs, access analysis and the structural hash.
#include <wm/frontend/ops.h>
#include <wm/frontend/workload.h>
#include <wm/ir/compute_dag.h>

#include <catch2/catch.hpp>

using namespace wm::ir;
namespace ops = wm::ops;

namespace {
ComputeDAG gemm(int64_t M, int64_t N, int64_t K, const std::string& a = "A",
                const std::string& b = "B", const std::string& c = "C") {
  Tensor A = placeholder(a, {M, K}), B = placeholder(b, {K, N});
  return ComputeDAG({ops::matmul(A, B, c)});
}
int indexByName(const ComputeDAG& dag, const std::string& name) {
  for (size_t i = 0; i < dag.size(); ++i)
    if (dag.op(static_cast<int>(i)).name == name) return static_cast<int>(i);
  return -1;
}
} // namespace

TEST_CASE("topological order puts producers first", "[dag]") {
  auto w = wm::parseWorkload("conv2d_bias_relu:N=1,C=8,H=9,W=9,K=4,R=3,S=3,pad=1");
  const auto& dag = w.dag;
  for (size_t i = 0; i < dag.size(); ++i)
    for (int p : dag.producers(static_cast<int>(i))) CHECK(p < static_cast<int>(i));
  CHECK(dag.op(static_cast<int>(dag.size()) - 1).name == "relu");
  CHECK(dag.placeholders().size() == 3);
  int pad = indexByName(dag, "conv2d_pad"), conv = indexByName(dag, "conv2d");
  REQUIRE(pad >= 0);
  CHECK(dag.consumers(pad) == std::vector<int>{conv});
}

TEST_CASE("FLOP counts", "[dag]") {
  // A multiply-add is 2 FLOPs; padding and index arithmetic count nothing.
  CHECK(wm::parseWorkload("conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1").dag.flops() ==
        231211008);
  CHECK(gemm(1024, 1024, 1024).flops() == 2LL * 1024 * 1024 * 1024);
  CHECK(wm::parseWorkload("relu:shape=2x3x4").dag.flops() == 24);
  // softmax on M x N: max (1/elem), sub+exp (2/elem), sum (1/elem), div (1/elem)
  CHECK(wm::parseWorkload("softmax:M=4,N=10").dag.flops() == 4 * 10 * 5);
}

TEST_CASE("structural hash ignores names", "[dag][hash]") {
  CHECK(gemm(64, 32, 16).structuralHash() == gemm(64, 32, 16, "X", "Y", "Z").structuralHash());
  // Axis names differ too.
  Tensor A = placeholder("P", {64, 16}), B = placeholder("Q", {16, 32});
  Tensor C = reduce("R", "other", {64, 32}, ReduceKind::Sum, {16},
                    [&](auto& ax, auto& r) { return at(A, ax[0], r[0]) * at(B, r[0], ax[1]); },
                    {"row", "col"}, {"red"});
  CHECK(ComputeDAG({C}).structuralHash() == gemm(64, 32, 16).structuralHash());
  CHECK(ComputeDAG({C}).workloadKey() == gemm(64, 32, 16).workloadKey());
}

TEST_CASE("structural hash changes with shape, op and expression", "[dag][hash]") {
  uint64_t base = gemm(64, 32, 16).structuralHash();
  CHECK(gemm(64, 32, 17).structuralHash() != base);
  CHECK(gemm(64, 33, 16).structuralHash() != base);
  CHECK(gemm(32, 64, 16).structuralHash() != base);
  // Same shapes, different op: dense reads W transposed.
  Tensor X = placeholder("A", {64, 16}), W = placeholder("B", {32, 16});
  CHECK(ComputeDAG({ops::dense(X, W)}).structuralHash() != base);
  // Expression changes.
  auto key = [](const std::string& s) { return wm::parseWorkload(s).dag.structuralHash(); };
  CHECK(key("relu:shape=8x8") != key("sigmoid:shape=8x8"));
  CHECK(key("clip:shape=8x8,min=0,max=6") != key("clip:shape=8x8,min=0,max=5"));
  CHECK(key("add:shape=8x8") != key("sub:shape=8x8"));
  CHECK(key("max_pool2d:C=4,H=8,W=8,R=2,S=2") != key("avg_pool2d:C=4,H=8,W=8,R=2,S=2"));
  CHECK(key("conv2d:C=4,H=8,W=8,K=4,R=3,S=3") != key("conv2d:C=4,H=8,W=8,K=4,R=3,S=3,pad=1"));
  CHECK(key("conv2d:C=4,H=8,W=8,K=4,R=3,S=3") != key("conv2d:C=4,H=8,W=8,K=4,R=3,S=3,dilation=2"));
  CHECK(key("conv2d:C=4,H=8,W=8,K=4,R=3,S=3") != key("conv2d:C=4,H=8,W=8,K=4,R=3,S=3,groups=2"));
  // Reduction kind.
  Tensor A = placeholder("A", {8, 8});
  auto red = [&](ReduceKind k) {
    return ComputeDAG({reduce("r", "t", {8}, k, {8},
                              [&](auto& ax, auto& r) { return at(A, ax[0], r[0]); })})
        .structuralHash();
  };
  CHECK(red(ReduceKind::Sum) != red(ReduceKind::Max));
  CHECK(red(ReduceKind::Max) != red(ReduceKind::Min));
  // Swapping which operand is read first.
  Tensor P = placeholder("P", {8}), Q = placeholder("Q", {8});
  auto ew = [&](bool swap) {
    return ComputeDAG({compute("o", "t", {8},
                               [&](auto& ax) {
                                 return swap ? at(Q, ax[0]) - at(P, ax[0])
                                             : at(P, ax[0]) - at(Q, ax[0]);
                               })})
        .structuralHash();
  };
  // Placeholders are numbered by first read, so swapping operands of the same shape yields
  // the same structure: a - b with renamed inputs.
  CHECK(ew(false) == ew(true));
}

TEST_CASE("workload keys are stable across versions", "[dag][hash]") {
  // Tuning logs name tasks by this key; a change here orphans every existing log. If you
  // change the hash on purpose, bump the log format version and update these values.
  CHECK(wm::parseWorkload("gemm:M=1024,N=1024,K=1024").dag.workloadKey() == "51d616d820502ed7");
  CHECK(wm::parseWorkload("conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1")
            .dag.workloadKey() == "edda18c27e3db3c9");
}

TEST_CASE("access analysis follows Ansor's definitions", "[dag]") {
  auto conv = wm::parseWorkload("conv2d_bias_relu:N=1,C=8,H=9,W=9,K=4,R=3,S=3,pad=1").dag;
  int pad = indexByName(conv, "conv2d_pad"), c = indexByName(conv, "conv2d"),
      bias = indexByName(conv, "bias_add"), relu = indexByName(conv, "relu");
  CHECK(conv.needsMultiLevelTiling(c));
  CHECK_FALSE(conv.needsMultiLevelTiling(bias));
  CHECK_FALSE(conv.isStrictlyInlineable(pad)); // has a branch
  CHECK(conv.isStrictlyInlineable(bias));
  CHECK(conv.isStrictlyInlineable(relu));
  CHECK_FALSE(conv.isSimpleAccess(c, pad)); // oh + rh
  CHECK(conv.isSimpleAccess(bias, c));
  CHECK(conv.isElementwiseMatch(c, bias));
  CHECK(conv.isElementwiseMatch(bias, relu));
  CHECK_FALSE(conv.isElementwiseMatch(pad, c));

  auto g = gemm(64, 64, 64);
  CHECK(g.needsMultiLevelTiling(2));
  auto sm = wm::parseWorkload("softmax:M=4,N=16").dag;
  CHECK_FALSE(sm.isStrictlyInlineable(indexByName(sm, "softmax_exp"))); // exp is expensive
  CHECK_FALSE(sm.needsMultiLevelTiling(indexByName(sm, "softmax_maxelem")));
  auto tr = wm::parseWorkload("add:shape=4x8,shape_b=8").dag;
  CHECK(tr.isStrictlyInlineable(indexByName(tr, "add")));
}
