// Search tests: sketch counts match Ansor's own tests (hardware with 4 cores, as there), and
// every state the annotator samples from every sketch of every operator lowers and computes
// the reference result.
#include "../support/random_schedule.h"

#include <wm/frontend/ops.h>
#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/lower/loop_interpreter.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/search/evolution.h>
#include <wm/search/heuristic.h>
#include <wm/search/sketch.h>

#include <catch2/catch.hpp>

#include <set>

using namespace wm;
using namespace wm::search;

namespace {

enum class TargetKind { Cpu, Gpu };

target::Target ansorCpu() {
  return target::ansorCpuDefaults(4);
}

size_t sketches(const std::string& spec, TargetKind t) {
  auto w = parseWorkload(spec);
  SearchTask task(w.dag, t == TargetKind::Cpu ? ansorCpu() : target::gpuDefaults());
  return generateSketches(task).size();
}

ir::ComputeDAG conv2dBnRelu() {
  using namespace wm::ops;
  auto data = ir::placeholder("data", {1, 16, 14, 14});
  auto weight = ir::placeholder("weight", {32, 16, 3, 3});
  auto bias = ir::placeholder("bias", {32});
  auto scale = ir::placeholder("bn_scale", {32, 1, 1});
  auto shift = ir::placeholder("bn_shift", {32, 1, 1});
  auto c = conv(data, weight, ConvParams::uniform(2, 1, 1, 1));
  auto b = biasAdd(c, bias, 1);
  auto m = mul(b, scale, "bn_mul");
  auto a = add(m, shift, "bn_add");
  return ir::ComputeDAG({relu(a)});
}

} // namespace

TEST_CASE("sketch counts match Ansor's tests", "[sketch]") {
  CHECK(sketches("gemm:M=512,N=512,K=512", TargetKind::Cpu) == 3);
  CHECK(sketches("gemm:M=8,N=8,K=512", TargetKind::Cpu) == 5);
  CHECK(sketches("gemm:M=512,N=512,K=512", TargetKind::Gpu) == 1);
  CHECK(sketches("gemm:M=8,N=8,K=1024", TargetKind::Gpu) == 2);
  CHECK(generateSketches(SearchTask(conv2dBnRelu(), ansorCpu())).size() == 3);
  CHECK(generateSketches(SearchTask(conv2dBnRelu(), target::gpuDefaults())).size() == 1);
}

TEST_CASE("sketches have Ansor's structure", "[sketch]") {
  auto w = parseWorkload("gemm:M=512,N=512,K=512");
  auto sk = generateSketches(SearchTask(w.dag, ansorCpu()));
  REQUIRE(sk.size() == 3);
  // Plain multi-level tiling: i and j in 4 parts, k in 2, order SSRSRS.
  std::string plain;
  for (auto& s : sk)
    if (s.state.numStages() == 3) plain = s.state.toString();
  CHECK_THAT(
      plain,
      Catch::Contains(
          "for i.0 (0,0)\n  for j.0 (0,0)\n    for i.1 (0,0)\n      for j.1 (0,0)\n"
          "        for k.0 (0,0) reduce\n          for i.2 (0,0)\n            for j.2 (0,0)\n"
          "              for k.1 (0,0) reduce\n                for i.3 (0,0)\n"
          "                  for j.3 (0,0)\n"));
  // The two cache-write sketches compute C.local at tile level 1 and 2 of C.
  int withCache = 0;
  for (auto& s : sk)
    if (s.state.numStages() == 4) {
      ++withCache;
      CHECK(s.state.stage(2).loc == sched::ComputeLoc::At);
    }
  CHECK(withCache == 2);
  // GPU: shared-memory cache reads of both inputs.
  auto gpu = generateSketches(SearchTask(w.dag, target::gpuDefaults()));
  REQUIRE(gpu.size() == 1);
  CHECK_THAT(gpu[0].state.toString(), Catch::Contains("A.shared (shared)"));
  CHECK_THAT(gpu[0].state.toString(), Catch::Contains("B.shared (shared)"));
}

TEST_CASE("random factorizations multiply to the extent", "[annotate]") {
  Rng rng(3);
  for (int64_t e : {1, 7, 64, 96, 1024, 1000}) {
    for (int parts = 1; parts <= 4; ++parts) {
      auto f = randomFactorization(e, parts, 64, rng);
      int64_t p = 1;
      for (int64_t x : f) p *= x;
      CHECK(p == e);
      CHECK(f.back() <= std::max<int64_t>(64, parts == 1 ? e : 64));
    }
  }
}

TEST_CASE("every sampled or mutated state of every operator computes the reference result",
          "[annotate][property]") {
  Rng rng(77);
  int sampled = 0, gpuOps = 0, mutatedOk = 0;
  for (TargetKind target : {TargetKind::Cpu, TargetKind::Gpu}) {
    for (const auto& spec : testing::smallWorkloads()) {
      auto w = parseWorkload(spec);
      SearchTask task(w.dag, target == TargetKind::Cpu ? target::ansorCpuDefaults(2)
                                                       : target::gpuDefaults());
      auto sk = generateSketches(task);
      REQUIRE(!sk.empty());
      auto inputs = ir::randomInputs(w.dag, rng.next());
      auto expect = ir::evaluateOutputs(w.dag, inputs);
      int valid = 0;
      for (int k = 0; k < 300 && valid < 12; ++k) {
        const auto& sketch = sk[rng.uniformInt(0, static_cast<int64_t>(sk.size()) - 1)];
        auto state = annotate(task, sketch, rng);
        if (!state) continue; // rejected before measurement
        INFO(spec << (target == TargetKind::Cpu ? " cpu" : " gpu") << "\n"
                  << sched::stepsToJson(state->steps()));
        auto r = sched::replay(w.dag, state->steps());
        REQUIRE(r.error.empty());
        auto f = lower::lower(r.state);
        if (testing::loopWork(f.body) > 2e5) continue; // too large to interpret quickly
        auto got = lower::runLowered(f, inputs);
        for (size_t o = 0; o < got.size(); ++o)
          REQUIRE(ir::maxRelativeError(got[o], expect[o]) <= 1e-4);
        ++valid;
        ++sampled;
        // Mutations of it, as the evolutionary search makes them.
        for (int m = 0; m < 3; ++m) {
          auto mutated = mutate(task, *state, rng);
          if (!mutated) continue;
          INFO("mutated: " << sched::stepsToJson(mutated->steps()));
          auto mf = lower::lower(sched::replay(w.dag, mutated->steps()).state);
          if (testing::loopWork(mf.body) > 2e5) continue;
          auto mg = lower::runLowered(mf, inputs);
          for (size_t o = 0; o < mg.size(); ++o)
            REQUIRE(ir::maxRelativeError(mg[o], expect[o]) <= 1e-4);
          ++mutatedOk;
        }
      }
      INFO(spec << (target == TargetKind::Cpu ? " cpu" : " gpu"));
      // On CPU every operator yields valid states; on GPU tiny shapes can fail the thread
      // checks (fewer than a warp of threads) on every draw, and are rejected.
      if (target == TargetKind::Cpu)
        CHECK(valid > 0);
      else
        gpuOps += valid > 0;
    }
  }
  CHECK(gpuOps >= static_cast<int>(testing::smallWorkloads().size()) * 3 / 4);
  CHECK(sampled > 500);
  CHECK(mutatedOk > 300);
}

TEST_CASE("sampled schedules of a channels-last conv read its result back in blocks or untiled",
          "[annotate]") {
  // The fused epilogue reads the [N, H, W, K] result back as NCHW: the annotator draws a block
  // of 1 (untiled), 8, 16 or 32 for K and W (their largest divisors at most that: 14-wide rows
  // give 7 or 14), ordered [N, K outer, H, W outer, K inner, W inner].
  auto w = parseWorkload("conv2d_cl_bias_relu:C=32,H=14,W=14,K=64,R=3,S=3,pad=1");
  SearchTask task(w.dag, target::ansorCpuDefaults(2));
  auto sk = generateSketches(task);
  REQUIRE(!sk.empty());
  Rng rng(19);
  std::set<std::pair<int64_t, int64_t>> blocks;
  int untiled = 0, valid = 0;
  for (int k = 0; k < 400; ++k) {
    auto state = annotate(task, sk[static_cast<size_t>(k) % sk.size()], rng);
    if (!state) continue;
    ++valid;
    const auto steps = state->steps();
    bool tiled = false;
    for (size_t t = 2; t < steps.size(); ++t) {
      auto* re = std::get_if<sched::ReorderStep>(&steps[t]);
      if (!re || re->order.size() != 6) continue;
      auto* sk0 = std::get_if<sched::SplitStep>(&steps[t - 2]);
      auto* sk1 = std::get_if<sched::SplitStep>(&steps[t - 1]);
      REQUIRE(sk0);
      REQUIRE(sk1);
      CHECK(sk0->extent == 64);
      CHECK(sk1->extent == 14);
      REQUIRE(sk0->lengths.size() == 1);
      REQUIRE(sk1->lengths.size() == 1);
      CHECK(re->order == std::vector<int>{0, 1, 3, 4, 2, 5});
      blocks.insert({sk0->lengths[0], sk1->lengths[0]});
      tiled = true;
    }
    untiled += !tiled;
  }
  CHECK(valid > 100);
  CHECK(untiled > 0);
  CHECK(blocks == std::set<std::pair<int64_t, int64_t>>{{8, 7}, {16, 14}, {32, 14}});
}

TEST_CASE("the heuristic's register tile fits the target's vector registers", "[heuristic]") {
  target::Target avx2 = target::ansorCpuDefaults(2);
  avx2.vectorBytes = 32;
  CHECK(avx2.vectorRegisters() == 16);
  CHECK(target::ansorCpuDefaults(2).vectorRegisters() == 32);
  // The innermost split lengths of the first multi-level tiled stage: {rows, vector lanes}.
  auto registerTile = [](const std::string& spec, const target::Target& t) {
    auto w = parseWorkload(spec);
    auto steps = heuristicSchedule(SearchTask(w.dag, t));
    REQUIRE(steps.has_value());
    std::vector<int64_t> inner;
    for (const auto& st : *steps)
      if (auto* sp = std::get_if<sched::SplitStep>(&st))
        if (sp->lengths.size() == 3 && inner.size() < 2) inner.push_back(sp->lengths.back());
    REQUIRE(inner.size() == 2); // split innermost axis first: {vector lanes, rows}
    return std::pair<int64_t, int64_t>{inner[1], inner[0]};
  };
  // AVX2: 6 rows x 2 vectors (12 accumulators, 2 loaded vectors, a broadcast: 15 of 16; the
  // last row tile of 1024 is partial) where AVX-512 keeps 4 x 4 of its 32.
  CHECK(registerTile("gemm:M=1024,N=1024,K=1024", avx2) == std::pair<int64_t, int64_t>{6, 16});
  CHECK(registerTile("gemm:M=1024,N=1024,K=1024", target::ansorCpuDefaults(2)) ==
        std::pair<int64_t, int64_t>{4, 64});
  for (const char* spec :
       {"gemm:M=256,N=256,K=256", "gemm:M=197,N=384,K=384", "batch_matmul:B=2,M=64,N=197,K=64",
        "conv2d_cl_bias_relu:C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
        "conv2d_cl_bias_relu:C=256,H=7,W=7,K=512,R=3,S=3,pad=1",
        "conv2d_cl_bias_relu:C=128,H=28,W=28,K=128,R=3,S=3,pad=1"}) {
    INFO(spec);
    auto [rows, lanes] = registerTile(spec, avx2);
    int64_t vectors = (lanes + 7) / 8;
    CHECK(rows * vectors + vectors + 1 <= 16);
    CHECK(rows * vectors >= 7); // enough accumulators to cover the FMA latency
  }
  // A pointwise conv computed over its flattened plane, rows along the output channels. A
  // 14 x 14 plane (196): 2 vectors of 8, the last of 13 tiles partial (8% of the lanes), not
  // vectors of 7. A 7 x 7 plane (49) keeps vectors of 7 (8 lanes would pad it by 14%).
  CHECK(registerTile("conv2d:C=32,H=14,W=14,K=64,R=1,S=1", avx2) ==
        std::pair<int64_t, int64_t>{4, 16});
  // 65 channels are 5 whole tiles of 13; 64 would leave a partial one of 5 tiles, a fifth of
  // the work with its rows guarded: 8 rows instead.
  CHECK(registerTile("conv2d:C=32,H=7,W=7,K=65,R=1,S=1", avx2) ==
        std::pair<int64_t, int64_t>{13, 7});
  CHECK(registerTile("conv2d:C=32,H=7,W=7,K=64,R=1,S=1", avx2) ==
        std::pair<int64_t, int64_t>{8, 7});
}

TEST_CASE("the heuristic's register tile over a packed weight is exactly one block wide",
          "[heuristic]") {
  // C[i, j] = sum_k A[i, k] B[j / 16, k, j % 16] (a MatMul weight packed by the frontend):
  // the innermost tile of j is the block, on AVX2 (2 vectors, where GEMM gets 2 as well) and
  // on AVX-512 (1 vector, where GEMM gets 4: 64 lanes would gather across blocks).
  auto a = ir::placeholder("A", {197, 64});
  auto b = ir::placeholder("B", {6, 64, 16});
  auto c = ir::reduce("C", "matmul", {197, 96}, ir::ReduceKind::Sum, {64}, [&](auto& ax, auto& r) {
    return ir::at(a, ax[0], r[0]) * ir::at(b, ax[1] / 16, r[0], ax[1] % 16);
  });
  ir::ComputeDAG dag({c});
  target::Target avx2 = target::ansorCpuDefaults(2);
  avx2.vectorBytes = 32;
  for (const auto& t : {avx2, target::ansorCpuDefaults(2)}) {
    INFO("vector bytes " << t.vectorBytes);
    auto steps = heuristicSchedule(SearchTask(dag, t));
    REQUIRE(steps.has_value());
    int64_t lanes = 0;
    for (const auto& st : *steps)
      if (auto* sp = std::get_if<sched::SplitStep>(&st))
        if (sp->lengths.size() == 3 && !lanes) lanes = sp->lengths.back();
    CHECK(lanes == 16);
    auto r = sched::replay(dag, *steps);
    REQUIRE(r.error.empty());
    auto f = lower::lower(r.state);
    std::string text = lower::toString(f);
    INFO(text);
    CHECK(text.find(" / 16") == std::string::npos); // the block index is the tile's own loop
    auto inputs = ir::randomInputs(dag, 3);
    CHECK(ir::maxRelativeError(lower::runLowered(f, inputs)[0],
                               ir::evaluateOutputs(dag, inputs)[0]) <= 1e-5);
  }
  // Sampled and mutated schedules keep the block innermost too (the columns are the only
  // axis of extent 96).
  CHECK(packedBlock(*dag.outputs()[0], 1) == 16);
  CHECK(packedBlock(*dag.outputs()[0], 0) == 0);
  SearchTask task(dag, avx2);
  auto sketches = generateSketches(task);
  REQUIRE(!sketches.empty());
  Rng rng(11);
  int checked = 0;
  auto columnsInner = [&](const sched::State& st) {
    for (const auto& step : st.steps())
      if (auto* sp = std::get_if<sched::SplitStep>(&step); sp && sp->extent == 96) {
        CHECK(sp->lengths.back() == 16);
        ++checked;
      }
  };
  for (int k = 0; k < 40; ++k) {
    auto st = annotate(task, sketches[k % sketches.size()], rng);
    if (!st) continue;
    columnsInner(*st);
    for (int m = 0; m < 5; ++m)
      if (auto mu = mutate(task, *st, rng)) columnsInner(*mu);
  }
  CHECK(checked >= 40);
}

TEST_CASE("the heuristic schedule of every operator is tiled and computes the reference result",
          "[heuristic]") {
  Rng rng(5);
  int tiledVector = 0;
  for (const auto& spec : testing::smallWorkloads()) {
    auto w = parseWorkload(spec);
    SearchTask task(w.dag, target::ansorCpuDefaults(2));
    auto steps = heuristicSchedule(task);
    INFO(spec);
    REQUIRE(steps.has_value());
    CHECK(sched::stepsToJson(*steps) == sched::stepsToJson(*heuristicSchedule(task)));
    auto r = sched::replay(w.dag, *steps);
    REQUIRE(r.error.empty());
    INFO(sched::stepsToJson(*steps));
    auto f = lower::lower(r.state);
    auto inputs = ir::randomInputs(w.dag, rng.next());
    auto expect = ir::evaluateOutputs(w.dag, inputs);
    auto got = lower::runLowered(f, inputs);
    for (size_t o = 0; o < got.size(); ++o)
      REQUIRE(ir::maxRelativeError(got[o], expect[o]) <= 1e-4);
    bool vectorized = false, split = false;
    for (const auto& st : *steps) {
      if (auto* a = std::get_if<sched::AnnotationStep>(&st))
        vectorized |= a->annotation == sched::Annotation::Vectorize;
      split |= std::holds_alternative<sched::SplitStep>(st);
    }
    tiledVector += vectorized && split;
  }
  CHECK(tiledVector >= 3);
  auto heuristicJson = [](const std::string& spec) {
    auto w = parseWorkload(spec);
    auto steps = heuristicSchedule(SearchTask(w.dag, target::ansorCpuDefaults(2)));
    return steps ? sched::stepsToJson(*steps) : std::string("(none)");
  };
  // GEMM: the vector axis tiled by 4 vectors, the rows (register reuse) by 4 (16
  // accumulators), cache tiles shrunk until 256x256 gives 8 parallel tiles, k blocked by 64.
  std::string json = heuristicJson("gemm:M=256,N=256,K=256");
  INFO(json);
  CHECK(json.find("[1,4,64]") != std::string::npos); // N: S2=4, S3=64 (4 AVX-512 vectors)
  CHECK(json.find("[1,8,4]") != std::string::npos);  // M: S2=8, S3=4 rows
  CHECK(json.find("[64]") != std::string::npos);     // K: 64
  CHECK(json.find("vectorize") != std::string::npos);
  CHECK(json.find("parallel") != std::string::npos);
  // dense (W read along K): its N axis is gathered, so one vector at most, 16 rows
  std::string djson = heuristicJson("dense:M=64,N=256,K=256");
  INFO(djson);
  CHECK(djson.find("256,[1,8,16]") != std::string::npos); // N: S3 = 16 lanes
  CHECK(djson.find("64,[1,1,16]") != std::string::npos);  // M: 16 rows
  // A prime row count (a ViT's 197 tokens) still gets 4-row register tiles, the last one
  // partial (200 rows: 1.5% padding), where only divisors would leave 1 row; and a prime
  // vector axis 16-lane tiles (the 13th holds 5 columns: 208 in all). For parallelism the
  // columns' cache tile is given back, not the rows' (25 row tiles: the nearest divisor to
  // half is 5, a fifth): 100 x 64 cache tiles, each weight panel read twice, not 20 x 384.
  std::string pjson = heuristicJson("gemm:M=197,N=384,K=384");
  INFO(pjson);
  CHECK(pjson.find("197,[1,25,4]") != std::string::npos); // 100-row cache tiles, 4-row registers
  CHECK(pjson.find("384,[1,1,64]") != std::string::npos);
  // A norm (one output, 65536 terms): rfactor with the factored loop innermost and of length 1,
  // so the factored stage reduces the fused axis in one loop; a softmax's rows (spatial 1536)
  // keep plain reductions.
  std::string njson = heuristicJson("norm:B=1,M=256,N=256");
  INFO(njson);
  CHECK(njson.find(R"(["FU",1,[1,2]],["SP",1,1,65536,[1],1],["RF",1,2,1])") != std::string::npos);
  CHECK(heuristicJson("softmax:M=1536,N=128").find("\"RF\"") == std::string::npos);
  std::string vjson = heuristicJson("batch_matmul:B=2,M=64,N=197,K=64");
  INFO(vjson);
  CHECK(vjson.find("197,[1,1,16]") != std::string::npos);
  // A channels-last conv with 7-wide rows: the output channels are the vector axis, 2 vectors
  // (32 lanes) x 7 rows fill 14 accumulators where 4 vectors would leave 1 row. The whole 7 x 7
  // plane is one cache tile (each weight vector serves 49 outputs), so the parallel loop runs
  // over the output channels: 8 cache tiles of 64, each thread reading its own weights.
  std::string cjson = heuristicJson("conv2d_cl_bias_relu:C=256,H=7,W=7,K=512,R=3,S=3,pad=1");
  INFO(cjson);
  CHECK(cjson.find("512,[1,2,32]") != std::string::npos); // K: 2 vectors, 2 of them per cache tile
  CHECK(cjson.find("7,[1,1,7]") != std::string::npos);    // the row: 7 registers
  CHECK(cjson.find("7,[1,7,1]") != std::string::npos);    // the rows: all 7 in the cache tile
  // A GEMM has no such axis: its cache tiles are unchanged (above); a 56 x 56 plane with 128
  // rows a cache tile keeps 2 output rows of 56 in it.
  CHECK(heuristicJson("conv2d_cl_bias_relu:C=64,H=56,W=56,K=64,R=3,S=3,pad=1").find("56,[1,2,1]") !=
        std::string::npos);
  // the epilogue reads the [N, H, W, K] result back to NCHW in 16 (K) x 7 (W) blocks
  CHECK(cjson.find("512,[16]") != std::string::npos);
  CHECK(cjson.find("7,[7]") != std::string::npos);
  for (const char* spec : {"gemm:M=197,N=48,K=24", "batch_matmul:B=2,M=37,N=197,K=8"}) {
    auto w = parseWorkload(spec);
    auto steps = heuristicSchedule(SearchTask(w.dag, target::ansorCpuDefaults(2)));
    INFO(spec);
    REQUIRE(steps.has_value());
    auto r = sched::replay(w.dag, *steps);
    REQUIRE(r.error.empty());
    auto inputs = ir::randomInputs(w.dag, 11);
    auto expect = ir::evaluateOutputs(w.dag, inputs);
    CHECK(ir::maxRelativeError(lower::runLowered(lower::lower(r.state), inputs)[0], expect[0]) <=
          1e-4);
  }
}
