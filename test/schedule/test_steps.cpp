// Tests of transform steps: JSON round trip of every kind, replay = step-by-step application,
// and illegal steps rejected with a message (never a crash, never a half-applied state).
#include <wm/frontend/workload.h>
#include <wm/schedule/steps.h>

#include <catch2/catch.hpp>

#include <set>

using namespace wm;
using namespace wm::sched;

namespace {
std::string tryStep(State& s, const Step& step) {
  std::string before = s.toString();
  size_t n = s.steps().size();
  std::string err = applyStep(s, step);
  if (!err.empty()) {
    // A rejected step leaves the state untouched.
    CHECK(s.toString() == before);
    CHECK(s.steps().size() == n);
  }
  return err;
}
} // namespace

TEST_CASE("every step kind round-trips through JSON", "[steps]") {
  std::vector<Step> all{
      AnnotationStep{2, 1, Annotation::ThreadX},
      FuseStep{3, {0, 1, 2}},
      PragmaStep{2, 0, "auto_unroll_max_step", 512},
      ReorderStep{2, {2, 0, 1}},
      SplitStep{2, 0, 1024, {8, 0, 4}, true},
      SplitStep{2, 1, 7, {3}, false},
      FollowSplitStep{3, 0, 4, 2},
      FollowFusedSplitStep{1, 0, {4, 5}, 1, true},
      StorageAlignStep{1, 0, 32, 8},
      ComputeAtStep{1, 3, 2},
      ComputeInlineStep{4},
      ComputeRootStep{4},
      CacheReadStep{0, ir::MemScope::Shared, {2, 3}},
      CacheWriteStep{2, ir::MemScope::Local},
      RfactorStep{2, 3, 1},
  };
  // Every kind of WM_STEP_KINDS is in the list.
  std::set<std::string> tags;
  for (auto& s : all) tags.insert(stepTag(s));
  CHECK(tags.size() == std::variant_size_v<Step> - 1);
  std::string json = stepsToJson(all);
  std::vector<Step> back;
  std::string err;
  REQUIRE(stepsFromJson(json, &back, &err));
  CHECK(back == all);
  CHECK(stepsToJson(back) == json);
  // The format itself is fixed (tuning logs store it).
  CHECK(stepsToJson({all[4], all[0]}) ==
        R"([["SP",2,0,1024,[8,null,4],1],["AN",2,1,"threadIdx.x"]])");
  for (auto& s : all) CHECK_FALSE(toString(s).empty());
}

TEST_CASE("bad schedule JSON names the step and the problem", "[steps]") {
  std::vector<Step> steps;
  std::string err;
  CHECK_FALSE(stepsFromJson("[[\"SP\",2,0]", &steps, &err));
  CHECK_THAT(err, Catch::Contains("invalid JSON"));
  CHECK_FALSE(stepsFromJson("{}", &steps, &err));
  CHECK_THAT(err, Catch::Contains("JSON array of steps"));
  CHECK_FALSE(stepsFromJson("[[\"CI\",1],[\"XX\",1]]", &steps, &err));
  CHECK_THAT(err, Catch::Contains("step 1: unknown step tag 'XX'"));
  CHECK_FALSE(stepsFromJson("[[\"SP\",2,0,16,[4]]]", &steps, &err));
  CHECK_THAT(err, Catch::Contains("step 0: SP: 4 fields, expected 5"));
  CHECK_FALSE(stepsFromJson("[[\"CA\",\"x\",1,2]]", &steps, &err));
  CHECK_THAT(err, Catch::Contains("field 1 (stage) is not an integer"));
  CHECK_FALSE(stepsFromJson("[[\"AN\",1,0,\"sideways\"]]", &steps, &err));
  CHECK_THAT(err, Catch::Contains("unknown annotation 'sideways'"));
  CHECK_FALSE(stepsFromJson("[[\"SP\",2,0,16,[0],1]]", &steps, &err));
  CHECK_THAT(err, Catch::Contains("positive integer nor null"));
}

TEST_CASE("replaying steps gives the state built step by step", "[steps]") {
  auto w = parseWorkload("gemm:M=32,N=32,K=32");
  State s(w.dag);
  std::vector<Step> steps{CacheWriteStep{2, ir::MemScope::Local}, SplitStep{2, 0, 32, {4, 2}, true},
                          SplitStep{3, 0, 32, {8}, true}, ComputeAtStep{2, 3, 0},
                          AnnotationStep{3, 0, Annotation::Parallel}};
  for (auto& st : steps) REQUIRE(applyStep(s, st).empty());
  auto r = replay(w.dag, steps);
  REQUIRE(r.error.empty());
  CHECK(r.state.toString() == s.toString());
  CHECK(r.state.steps() == s.steps());
  // A compute-at stage's loops cover only the region its consumer needs: 8 rows.
  CHECK(r.state.stage(2).iters[0].extent == 8);
}

TEST_CASE("illegal steps are rejected with a message", "[steps][errors]") {
  auto gemm = parseWorkload("gemm:M=16,N=16,K=16").dag; // 0 A, 1 B, 2 C
  State s(gemm);
  CHECK_THAT(tryStep(s, SplitStep{7, 0, 16, {4}, true}), Catch::Contains("stage 7 out of range"));
  CHECK_THAT(tryStep(s, SplitStep{0, 0, 16, {4}, true}), Catch::Contains("is a placeholder"));
  CHECK_THAT(tryStep(s, SplitStep{2, 3, 16, {4}, true}), Catch::Contains("loop 3 out of range"));
  CHECK_THAT(tryStep(s, SplitStep{2, 0, 16, {}, true}), Catch::Contains("at least one length"));
  // A loop fused away can no longer be split: after fusing i and j only 2 loops remain.
  REQUIRE(tryStep(s, FuseStep{2, {0, 1}}).empty());
  CHECK_THAT(tryStep(s, SplitStep{2, 2, 16, {4}, true}), Catch::Contains("loop 2 out of range"));
  CHECK_THAT(tryStep(s, FuseStep{2, {0, 1}}),
             Catch::Contains("spatial loop with a reduction loop"));
  // Reorders must list every loop exactly once.
  CHECK_THAT(tryStep(s, ReorderStep{2, {0}}), Catch::Contains("reorder lists 1 loops"));
  CHECK_THAT(tryStep(s, ReorderStep{2, {1, 1}}), Catch::Contains("listed twice"));
  CHECK_THAT(tryStep(s, AnnotationStep{2, 1, Annotation::Parallel}),
             Catch::Contains("cannot annotate reduction loop"));
  REQUIRE(tryStep(s, AnnotationStep{2, 0, Annotation::Parallel}).empty());
  CHECK_THAT(tryStep(s, AnnotationStep{2, 0, Annotation::Vectorize}),
             Catch::Contains("already annotated"));
  CHECK_THAT(tryStep(s, SplitStep{2, 0, 256, {4}, true}), Catch::Contains("it is annotated"));
  CHECK_THAT(tryStep(s, PragmaStep{2, 0, "fast_math", 1}), Catch::Contains("unknown pragma"));
  CHECK_THAT(tryStep(s, CacheWriteStep{2, ir::MemScope::Local}),
             Catch::Contains("must come before its loop transforms"));
  CHECK_THAT(tryStep(s, RfactorStep{2, 0, 0}), Catch::Contains("is not a reduction loop"));
  CHECK_THAT(tryStep(s, ComputeInlineStep{2}), Catch::Contains("it has a reduction"));
  CHECK_THAT(tryStep(s, ComputeAtStep{2, 2, 0}), Catch::Contains("at itself"));
  CHECK_THAT(tryStep(s, ComputeAtStep{2, 0, 0}), Catch::Contains("is a placeholder"));
  CHECK_THAT(tryStep(s, FollowSplitStep{2, 1, 0, 2}), Catch::Contains("is FU, not SP"));
  CHECK_THAT(tryStep(s, CacheReadStep{0, ir::MemScope::Shared, {1}}),
             Catch::Contains("does not read A"));
  CHECK_THAT(tryStep(s, StorageAlignStep{2, 5, 8, 0}), Catch::Contains("axis 5 out of range"));
  CHECK_THAT(tryStep(s, StorageAlignStep{2, 0, 8, 9}),
             Catch::Contains("offset must be in [0, factor)"));

  // Compute-at into a stage that does not consume the producer.
  auto cbr = parseWorkload("conv2d_bias_relu:C=2,H=5,W=5,K=2,R=3,S=3,pad=1").dag;
  State t(cbr); // 0 data, 1 pad, 2 weight, 3 conv2d, 4 bias, 5 bias_add, 6 relu
  CHECK_THAT(tryStep(t, ComputeAtStep{1, 6, 0}), Catch::Contains("is not the only consumer"));
  CHECK_THAT(tryStep(t, ComputeInlineStep{6}), Catch::Contains("cannot inline output"));
  CHECK_THAT(tryStep(t, ComputeAtStep{6, 5, 0}), Catch::Contains("is an output"));
  REQUIRE(tryStep(t, ComputeInlineStep{5}).empty());
  CHECK_THAT(tryStep(t, ComputeAtStep{3, 5, 0}), Catch::Contains("is inlined"));
  // With bias_add inlined, relu is conv2d's only consumer; moving bias_add out of line again
  // would leave conv2d computed at a stage that no longer consumes it.
  REQUIRE(tryStep(t, ComputeAtStep{3, 6, 1}).empty());
  CHECK_THAT(tryStep(t, ComputeRootStep{5}), Catch::Contains("no longer be its only consumer"));
  CHECK_THAT(tryStep(t, CacheReadStep{3, ir::MemScope::Local, {5}}),
             Catch::Contains("computed at another stage"));
  CHECK_THAT(tryStep(t, CacheWriteStep{6, ir::MemScope::Local}),
             Catch::Contains("stages are computed at it"));
}
