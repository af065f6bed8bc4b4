// Lowering tests: hand-written schedules that mirror Ansor's CPU multi-level tiling (SSRSRS)
// for GEMM and conv2d and its GPU tiling (SSSRRSRS) with shared-memory cache reads lower to the
// loop nests kept in expected/*.txt and compute the reference result. Set
// WM_UPDATE_EXPECTED=1 to rewrite the expectations after an intended change (and review the
// diff). Also: the naive program, pass printing, and the bounds of compute-at stages.
#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/lower/loop_interpreter.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace wm;

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

lower::LoweredFunc lowerWith(const std::string& spec, const std::string& scheduleFile) {
  auto w = parseWorkload(spec);
  std::vector<sched::Step> steps;
  std::string err;
  std::string path = std::string(WM_TEST_DATA_DIR) + "/schedules/" + scheduleFile;
  INFO(path);
  REQUIRE(sched::stepsFromJson(readFile(path), &steps, &err));
  auto r = sched::replay(w.dag, steps);
  INFO("failed step " << r.failedStep << ": " << r.error);
  REQUIRE(r.error.empty());
  auto f = lower::lower(r.state);
  auto inputs = ir::randomInputs(w.dag, 5);
  auto expect = ir::evaluateOutputs(w.dag, inputs);
  auto got = lower::runLowered(f, inputs);
  CHECK(ir::maxRelativeError(got[0], expect[0]) <= 1e-5);
  return f;
}

void checkExpected(const lower::LoweredFunc& f, const std::string& name) {
  std::string path = std::string(WM_TEST_DATA_DIR) + "/expected/" + name;
  std::string text = lower::toString(f);
  if (std::getenv("WM_UPDATE_EXPECTED")) {
    std::ofstream(path) << text;
    return;
  }
  INFO("expectation " << path << " (WM_UPDATE_EXPECTED=1 rewrites it)");
  CHECK(text == readFile(path));
}

} // namespace

TEST_CASE("CPU multi-level tiling (SSRSRS) of GEMM", "[lowering]") {
  auto f = lowerWith("gemm:M=64,N=64,K=64", "gemm_cpu_ssrsrs.json");
  checkExpected(f, "gemm_cpu_ssrsrs.txt");
  // The cache-write stage is computed per tile into a compact local buffer.
  CHECK_THAT(lower::toString(f), Catch::Contains("allocate C.local: f32[16, 32] local"));
}

TEST_CASE("CPU multi-level tiling (SSRSRS) of conv2d with the padding computed per tile",
          "[lowering]") {
  auto f = lowerWith("conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1", "conv2d_cpu_ssrsrs.json");
  checkExpected(f, "conv2d_cpu_ssrsrs.txt");
  CHECK_THAT(lower::toString(f), Catch::Contains("allocate conv2d_pad: f32[1, 4, 3, 7] global"));
}

TEST_CASE("GPU multi-level tiling (SSSRRSRS) of GEMM with shared-memory cache reads",
          "[lowering]") {
  auto f = lowerWith("gemm:M=64,N=64,K=64", "gemm_gpu_sssrrsrs.json");
  checkExpected(f, "gemm_gpu_sssrrsrs.txt");
  std::string text = lower::toString(f);
  // Shared tiles cover the whole thread block (relaxed over threadIdx), not one thread's part.
  CHECK_THAT(text, Catch::Contains("allocate A.shared: f32[16, 8] shared"));
  CHECK_THAT(text, Catch::Contains("allocate B.shared: f32[8, 16] shared"));
  CHECK_THAT(text, Catch::Contains("blockIdx.x"));
  CHECK_THAT(text, Catch::Contains("threadIdx.x"));
}

TEST_CASE("the naive program of GEMM", "[lowering]") {
  auto w = parseWorkload("gemm:M=8,N=8,K=4");
  auto f = lower::lower(sched::State(w.dag));
  CHECK(lower::toString(f) == "func C(A: f32[8, 4], B: f32[4, 8], C: f32[8, 8])\n"
                              "for i in [0, 8)\n"
                              "  for j in [0, 8)\n"
                              "    C[i, j] = 0.0\n"
                              "    for k in [0, 4)\n"
                              "      C[i, j] = C[i, j] + A[i, k] * B[k, j]\n");
}

TEST_CASE("non-dividing splits are guarded", "[lowering]") {
  // The guard of the partial tile, tested once per tile (hoist_guards): full tiles unguarded.
  auto w = parseWorkload("relu:shape=10");
  sched::State s(w.dag);
  REQUIRE(sched::applyStep(s, sched::SplitStep{1, 0, 10, {4}, true}).empty());
  auto f = lower::lower(s);
  CHECK(lower::toString(f) == "func relu(data: f32[10], relu: f32[10])\n"
                              "for i0.0 in [0, 3)\n"
                              "  if i0.0 * 4 < 7\n"
                              "    for i0.1 in [0, 4)\n"
                              "      relu[i0.0 * 4 + i0.1] = max(data[i0.0 * 4 + i0.1], 0.0)\n"
                              "  else\n"
                              "    for i0.1 in [0, 4)\n"
                              "      if i0.0 * 4 + i0.1 < 10\n"
                              "        relu[i0.0 * 4 + i0.1] = max(data[i0.0 * 4 + i0.1], 0.0)\n");
  auto inputs = ir::randomInputs(w.dag, 3);
  CHECK(ir::maxRelativeError(lower::runLowered(f, inputs)[0],
                             ir::evaluateOutputs(w.dag, inputs)[0]) <= 1e-6);
}

// GEMM M=197 (4-row register tiles in 20-row cache tiles, the last partial) x N x K=16, the
// columns in one tile of `cols` (lanes: vectorized), lowered.
static lower::LoweredFunc lowerTiledGemm197(int64_t n, int64_t cols, ir::ComputeDAG* dag) {
  auto w = parseWorkload("gemm:M=197,N=" + std::to_string(n) + ",K=16");
  std::vector<sched::Step> steps;
  std::string err;
  std::string json = R"([["CHW",2,"local"],["SP",2,2,16,[16],1],["SP",2,1,)" + std::to_string(n) +
                     ",[1,1," + std::to_string(cols) + "],1]," +
                     R"(["SP",2,0,197,[1,5,4],1],["RE",2,[0,4,1,5,8,2,6,9,3,7]],["FSP",3,1,2,2],)"
                     R"(["FSP",3,0,3,2],["RE",3,[0,3,1,4,2,5]],["CA",2,3,3],)"
                     R"(["PR",2,0,"auto_unroll_max_step",64],["AN",2,9,"vectorize"],)"
                     R"(["FU",3,[0,1,2,3]],["AN",3,0,"parallel"],["AN",3,2,"vectorize"]])";
  REQUIRE(sched::stepsFromJson(json, &steps, &err));
  INFO(err);
  auto r = sched::replay(w.dag, steps);
  INFO("failed step " << r.failedStep << ": " << r.error);
  REQUIRE(r.error.empty());
  *dag = w.dag;
  return lower::lower(r.state);
}

// Its largest relative error against the reference interpreter.
static double lowerTiledGemm197Error(const lower::LoweredFunc& f, const ir::ComputeDAG& dag) {
  auto inputs = ir::randomInputs(dag, 7);
  return ir::maxRelativeError(lower::runLowered(f, inputs)[0], ir::evaluateOutputs(dag, inputs)[0]);
}

TEST_CASE("guards of partial tiles are hoisted out of the full tiles", "[lowering]") {
  // 197 rows (a ViT's tokens; prime): 4-row register tiles in 20-row cache tiles, the last of
  // each partial (the heuristic schedule). The guards are tested once per cache tile (the
  // parallel loop's variable and the largest row inside the tile); the full tiles run an
  // unguarded copy, the partial one the guarded nest, its rows' guards tested above the
  // vectorized loops.
  ir::ComputeDAG dag;
  auto f = lowerTiledGemm197(64, 64, &dag);
  std::string text = lower::toString(f);
  INFO(text);
  const std::string test = "\n  if i.0@j.0@i.1@j.1 * 20 < 178\n", otherwise = "\n  else\n";
  size_t t = text.find(test), e = text.find(otherwise);
  REQUIRE(t != std::string::npos);
  REQUIRE(e != std::string::npos);
  REQUIRE(t < e);
  std::string fast = text.substr(t + test.size(), e - t - test.size());
  std::string slow = text.substr(e);
  CHECK(fast.find("if ") == std::string::npos);
  CHECK_THAT(fast, Catch::Contains("vectorized\n"));
  CHECK_THAT(slow, Catch::Contains("if i.0@j.0@i.1@j.1 * 20 + i.2 * 4 < 194\n"));
  CHECK_THAT(slow, Catch::Contains("if i.0@j.0@i.1@j.1 * 20 + i.2 * 4 + i.3 < 197\n"));
  // no guard is left inside a vectorized loop
  for (size_t p = text.find("vectorized\n"); p != std::string::npos;
       p = text.find("vectorized\n", p + 1)) {
    size_t next = text.find('\n', text.find('\n', p) + 1);
    CHECK(text.substr(p, next - p).find("if ") == std::string::npos);
  }
  CHECK(lowerTiledGemm197Error(f, dag) <= 1e-5);
}

TEST_CASE("a tile partial along its rows or its columns keeps the other axis unguarded",
          "[lowering]") {
  // 197 rows in tiles of 20, 70 columns in tiles of 16: the two tests get a copy per outcome.
  // The tiles partial along rows only run their columns without guards (plain vectors), and
  // those partial along columns only run their rows without guards.
  ir::ComputeDAG dag;
  auto f = lowerTiledGemm197(70, 16, &dag);
  std::string text = lower::toString(f);
  INFO(text);
  const std::string rows = "if i.0@j.0@i.1@j.1 / 5 * 20 < 178\n",
                    cols = "if i.0@j.0@i.1@j.1 % 5 * 16 < 55\n";
  const std::string rowGuard = "if i.0@j.0@i.1@j.1 / 5 * 20 + i.",
                    colGuard = "if i.0@j.0@i.1@j.1 % 5 * 16 + j.";
  // if rows { if cols {full} else {columns partial} } else { if cols {rows partial} else ... }
  size_t r0 = text.find("\n  " + rows), c0 = text.find("\n    " + cols, r0);
  size_t e0 = text.find("\n    else\n", c0), e1 = text.find("\n  else\n", e0);
  size_t c1 = text.find("\n    " + cols, e1), e2 = text.find("\n    else\n", c1);
  REQUIRE(r0 != std::string::npos);
  REQUIRE(c0 != std::string::npos);
  REQUIRE(e0 != std::string::npos);
  REQUIRE(e1 != std::string::npos);
  REQUIRE(c1 != std::string::npos);
  REQUIRE(e2 != std::string::npos);
  std::string full = text.substr(c0, e0 - c0), colsPartial = text.substr(e0, e1 - e0);
  std::string rowsPartial = text.substr(c1, e2 - c1), both = text.substr(e2);
  CHECK(full.find(rowGuard) == std::string::npos);
  CHECK(full.find(colGuard) == std::string::npos);
  CHECK(colsPartial.find(rowGuard) == std::string::npos);
  CHECK_THAT(colsPartial, Catch::Contains(colGuard));
  CHECK(rowsPartial.find(colGuard) == std::string::npos);
  CHECK_THAT(rowsPartial, Catch::Contains(rowGuard));
  CHECK_THAT(both, Catch::Contains(rowGuard) && Catch::Contains(colGuard));
  CHECK(lowerTiledGemm197Error(f, dag) <= 1e-5);
}

TEST_CASE("a padding stage's loops are split where its condition turns: the interior copies "
          "without a select",
          "[lowering]") {
  // partition_loops: every select of the padding stage was one speculative, clamped load an
  // element (gathers in LLVM); split at 1 and 6 the rows and columns inside copy plainly.
  auto w = parseWorkload("conv2d:N=1,C=2,H=5,W=5,K=2,R=3,S=3,pad=1");
  auto f = lower::lower(sched::State(w.dag));
  CHECK(lower::toString(f) ==
        "func conv2d(data: f32[1, 2, 5, 5], weight: f32[2, 2, 3, 3], conv2d: f32[1, 2, 5, 5])\n"
        "allocate conv2d_pad: f32[1, 2, 7, 7] global\n"
        "for i1 in [0, 2)\n"
        "  conv2d_pad[0, i1, 0, 0] = 0.0\n"
        "  for i3 in [0, 5)\n"
        "    conv2d_pad[0, i1, 0, i3 + 1] = 0.0\n"
        "  conv2d_pad[0, i1, 0, 6] = 0.0\n"
        "  for i2 in [0, 5)\n"
        "    conv2d_pad[0, i1, i2 + 1, 0] = 0.0\n"
        "    for i3 in [0, 5)\n"
        "      conv2d_pad[0, i1, i2 + 1, i3 + 1] = data[0, i1, i2, i3]\n"
        "    conv2d_pad[0, i1, i2 + 1, 6] = 0.0\n"
        "  conv2d_pad[0, i1, 6, 0] = 0.0\n"
        "  for i3 in [0, 5)\n"
        "    conv2d_pad[0, i1, 6, i3 + 1] = 0.0\n"
        "  conv2d_pad[0, i1, 6, 6] = 0.0\n"
        "for k in [0, 2)\n"
        "  for oh in [0, 5)\n"
        "    for ow in [0, 5)\n"
        "      conv2d[0, k, oh, ow] = 0.0\n"
        "      for rc in [0, 2)\n"
        "        for rh in [0, 3)\n"
        "          for rw in [0, 3)\n"
        "            conv2d[0, k, oh, ow] = conv2d[0, k, oh, ow] + conv2d_pad[0, rc, oh + rh, ow + "
        "rw] * weight[k, rc, rh, rw]\n");
  auto inputs = ir::randomInputs(w.dag, 3);
  CHECK(ir::maxRelativeError(lower::runLowered(f, inputs)[0],
                             ir::evaluateOutputs(w.dag, inputs)[0]) <= 1e-6);
  // A condition whose turning point moves with an outer loop (the padding inlined into the
  // convolution: oh + rh >= 1) splits nothing; a select on a fused, parallel loop neither.
  std::vector<sched::Step> steps;
  std::string err;
  REQUIRE(sched::stepsFromJson(R"([["CI",1]])", &steps, &err));
  auto inl = sched::replay(w.dag, steps);
  REQUIRE(inl.error.empty());
  auto g = lower::lower(inl.state);
  std::string text = lower::toString(g);
  CHECK_THAT(text, Catch::Contains("select("));
  CHECK(ir::maxRelativeError(lower::runLowered(g, inputs)[0],
                             ir::evaluateOutputs(w.dag, inputs)[0]) <= 1e-6);
}

TEST_CASE("print-after-all and pass timing", "[lowering]") {
  auto w = parseWorkload("relu:shape=4");
  std::ostringstream log;
  lower::LowerOptions o;
  o.printAfterAll = true;
  o.timePasses = true;
  o.log = &log;
  lower::lower(sched::State(w.dag), o);
  for (const char* pass :
       {"schedule_ops", "simplify", "partition_loops", "hoist_guards", "remove_no_ops"}) {
    CHECK_THAT(log.str(), Catch::Contains(std::string("// after ") + pass));
    CHECK_THAT(log.str(), Catch::Contains(std::string("pass ") + pass));
  }
}

TEST_CASE("a state with open split lengths cannot be lowered", "[lowering]") {
  auto w = parseWorkload("gemm:M=8,N=8,K=8");
  sched::State s(w.dag);
  REQUIRE(sched::applyStep(s, sched::SplitStep{2, 0, 8, {0, 2}, true}).empty());
  CHECK_FALSE(s.concrete());
  CHECK_THROWS_AS(lower::lower(s), UserError);
}
