// Unit tests of the workload table and the spec parser: every example builds, the required
// spellings work, and every kind of bad spec is a UserError naming the bad part.
#include <wm/frontend/workload.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

#include <set>

using wm::parseWorkload;

namespace {
std::string errorOf(const std::string& spec) {
  try {
    parseWorkload(spec);
  } catch (const wm::UserError& e) {
    return e.what();
  }
  return "(no error)";
}
} // namespace

TEST_CASE("every built-in workload's example builds", "[workloads]") {
  for (auto& def : wm::workloadDefs()) {
    INFO(def.example);
    auto w = parseWorkload(def.example);
    CHECK(w.def == &def);
    CHECK(w.dag.size() >= 2);
    CHECK(w.dag.flops() > 0);
  }
}

TEST_CASE("the operator list covers the library", "[workloads]") {
  std::set<std::string> names;
  for (auto& d : wm::workloadDefs()) names.insert(d.name);
  for (const char* op : {"gemm",
                         "dense",
                         "batch_matmul",
                         "conv1d",
                         "conv2d",
                         "depthwise_conv2d",
                         "conv3d",
                         "conv2d_transpose",
                         "max_pool2d",
                         "avg_pool2d",
                         "global_avg_pool2d",
                         "bias_add",
                         "relu",
                         "clip",
                         "relu6",
                         "sigmoid",
                         "tanh",
                         "gelu",
                         "add",
                         "mul",
                         "sub",
                         "div",
                         "batch_norm",
                         "softmax",
                         "layer_norm",
                         "norm",
                         "conv2d_bias_relu",
                         "conv2d_cl_bias_relu",
                         "dense_bias_gelu"})
    CHECK(names.count(op));
}

TEST_CASE("the spellings used by outside scripts work as written", "[workloads]") {
  auto g = parseWorkload("gemm:M=1024,N=1024,K=1024");
  CHECK(g.dag.placeholders()[0]->shape == wm::ir::Shape{1024, 1024});
  auto b = parseWorkload("batch_matmul:B=12,M=128,N=128,K=64");
  CHECK(b.dag.outputs()[0]->shape == wm::ir::Shape{12, 128, 128});
  auto c = parseWorkload("conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1");
  CHECK(c.dag.outputs()[0]->shape == wm::ir::Shape{1, 64, 56, 56});
  auto cd =
      parseWorkload("conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=2,pad=2,dilation=2,groups=4");
  CHECK(cd.dag.outputs()[0]->shape == wm::ir::Shape{1, 64, 28, 28});
  auto s = parseWorkload("softmax:M=128,N=1024");
  CHECK(s.dag.outputs()[0]->shape == wm::ir::Shape{128, 1024});
  // Defaults are filled in, in declared order.
  CHECK(parseWorkload("conv2d:C=3,H=8,W=8,K=4,R=3,S=3").canonical ==
        "conv2d:N=1,C=3,H=8,W=8,K=4,R=3,S=3,stride=1,pad=0,dilation=1,groups=1");
}

TEST_CASE("bad specs are user errors naming the bad part", "[workloads][errors]") {
  CHECK_THAT(errorOf("gemmm:M=1"), Catch::Contains("unknown op 'gemmm'"));
  CHECK_THAT(errorOf("gemm:M=4,N=4"), Catch::Contains("missing parameter 'K'"));
  CHECK_THAT(errorOf("gemm:M=4,N=4,K=4,Q=3"), Catch::Contains("unknown parameter 'Q'"));
  CHECK_THAT(errorOf("gemm:M=4,N=4,K=x"), Catch::Contains("K=x is not an integer"));
  CHECK_THAT(errorOf("gemm:M=0,N=4,K=4"), Catch::Contains("M=0 must be >= 1"));
  CHECK_THAT(errorOf("gemm:M=-3,N=4,K=4"), Catch::Contains("M=-3 must be >= 1"));
  CHECK_THAT(errorOf("gemm:M=4,M=4,N=4,K=4"), Catch::Contains("'M' given twice"));
  CHECK_THAT(errorOf("gemm:M4,N=4,K=4"), Catch::Contains("'M4' is not key=value"));
  CHECK_THAT(errorOf("gemm:M=,N=4,K=4"), Catch::Contains("'M' has no value"));
  CHECK_THAT(errorOf("gemm:"), Catch::Contains("nothing after ':'"));
  CHECK_THAT(errorOf(""), Catch::Contains("empty workload spec"));
  CHECK_THAT(errorOf("relu:shape=4xx4"), Catch::Contains("not a shape"));
  CHECK_THAT(errorOf("relu:shape=4x0"), Catch::Contains("not a shape"));
  CHECK_THAT(errorOf("clip:shape=4,min=a"), Catch::Contains("min=a is not a number"));
  CHECK_THAT(errorOf("clip:shape=4,min=3,max=1"), Catch::Contains("min 3 is above max 1"));
  CHECK_THAT(errorOf("conv2d:C=6,H=8,W=8,K=4,R=3,S=3,groups=4"),
             Catch::Contains("groups=4 does not divide C=6"));
  CHECK_THAT(errorOf("conv2d:C=4,H=2,W=8,K=4,R=3,S=3"), Catch::Contains("kernel extent 3"));
  CHECK_THAT(errorOf("max_pool2d:C=4,H=8,W=8,R=2,S=2,pad=2"),
             Catch::Contains("padding must be smaller than the kernel"));
  CHECK_THAT(errorOf("add:shape=4x3,shape_b=5"), Catch::Contains("cannot be broadcast"));
  CHECK_THAT(errorOf("bias_add:shape=4x3,axis=2"), Catch::Contains("axis=2 is out of range"));
  // The spec itself is quoted so the user can find it among many.
  CHECK_THAT(errorOf("gemm:M=0,N=4,K=4"), Catch::StartsWith("workload 'gemm:M=0,N=4,K=4': "));
}
