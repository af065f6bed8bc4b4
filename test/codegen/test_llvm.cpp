// CPU backend tests: every property-test schedule (same generator, same seed as
// test/schedule/test_property.cpp) compiled by LLVM and run computes the reference result; a
// vectorized inner loop holds vector FMAs in the emitted assembly, and so does a contiguous
// innermost loop that auto-unroll unrolls whole; IR and objects are emitted.
#include "../support/random_schedule.h"

#include <wm/codegen/codegen.h>
#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/lower/lower.h>
#include <wm/rt/parallel.h>
#include <wm/runtime/buffer.h>
#include <wm/schedule/steps.h>
#include <wm/search/heuristic.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <regex>
#include <sstream>

using namespace wm;

namespace {

/// Whether this machine can run code built for the named -mcpu (the tests emit code for
/// x86-64-v4 and haswell wherever they run, but run it only where the CPU has the features:
/// the machines these tests run on have AVX-512 on some days and not on others).
bool hostRuns(const std::string& cpu) {
#if defined(__x86_64__)
  if (cpu == "x86-64-v4")
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (cpu == "haswell")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("bmi2");
#endif
  return false;
}

std::vector<ir::NDArray> runJit(const codegen::JitKernel& k, const lower::LoweredFunc& f,
                                const std::vector<ir::NDArray>& inputs) {
  std::vector<runtime::HostBuffer> bufs;
  for (auto& a : inputs) bufs.push_back(runtime::HostBuffer::from(a));
  for (auto& o : f.outputs) bufs.emplace_back(o->dtype, o->shape, o->allocElements());
  std::vector<void*> args;
  for (auto& b : bufs) args.push_back(b.data());
  k.call(args.data());
  std::vector<ir::NDArray> outs;
  for (size_t i = 0; i < f.outputs.size(); ++i)
    outs.push_back(bufs[inputs.size() + i].toNDArray(f.outputs[i]->strides));
  return outs;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("every property-test schedule runs correctly through LLVM", "[llvm][property]") {
  rt::setNumThreads(2);
  auto target = codegen::resolveTarget({});
  Rng rng(20261202); // the seed of test_property.cpp: the same schedules
  int checked = 0, gpuOnly = 0;
  for (const auto& spec : testing::smallWorkloads()) {
    auto w = parseWorkload(spec);
    auto inputs = ir::randomInputs(w.dag, rng.next());
    auto expect = ir::evaluateOutputs(w.dag, inputs);
    for (int k = 0; k < 50;) {
      sched::State built;
      auto steps = testing::randomSchedule(w.dag, rng, 14, &built);
      auto f = lower::lower(built);
      if (testing::loopWork(f.body) > 2e5) continue; // skipped there too
      ++k;
      INFO(spec << "\nschedule: " << sched::stepsToJson(steps) << "\n" << lower::toString(f));
      if (testing::hasThreadBinding(f.body)) { // a GPU schedule: refused, never run serially
        CHECK_THROWS_WITH(codegen::JitKernel::compile(f, target),
                          Catch::Contains("a GPU schedule; the CPU cannot run it"));
        ++gpuOnly;
        continue;
      }
      auto kernel = codegen::JitKernel::compile(f, target);
      auto got = runJit(*kernel, f, inputs);
      for (size_t o = 0; o < got.size(); ++o)
        REQUIRE(ir::maxRelativeError(got[o], expect[o]) <= 1e-4);
      ++checked;
    }
  }
  CHECK(checked + gpuOnly == 50 * static_cast<int>(testing::smallWorkloads().size()));
  CHECK(checked > gpuOnly); // most schedules are CPU schedules
}

TEST_CASE("hand-written schedules run correctly through LLVM", "[llvm]") {
  auto target = codegen::resolveTarget({});
  for (auto [spec, file] : std::vector<std::pair<std::string, std::string>>{
           {"gemm:M=64,N=64,K=64", "gemm_cpu_ssrsrs.json"},
           {"conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1", "conv2d_cpu_ssrsrs.json"}}) {
    INFO(file);
    auto w = parseWorkload(spec);
    std::vector<sched::Step> steps;
    std::string err;
    REQUIRE(sched::stepsFromJson(readFile(std::string(WM_TEST_DATA_DIR) + "/schedules/" + file),
                                 &steps, &err));
    auto r = sched::replay(w.dag, steps);
    REQUIRE(r.error.empty());
    auto f = lower::lower(r.state);
    auto inputs = ir::randomInputs(w.dag, 3);
    auto got = runJit(*codegen::JitKernel::compile(f, target), f, inputs);
    CHECK(ir::maxRelativeError(got[0], ir::evaluateOutputs(w.dag, inputs)[0]) <= 1e-5);
  }
}

// The heuristic schedule of a workload, JIT-compiled and checked against the reference
// interpreter; `lowered` receives the lowered function's text.
static void checkHeuristicJit(const std::string& spec, uint64_t seed, std::string* lowered) {
  rt::setNumThreads(2);
  auto target = codegen::resolveTarget({});
  auto w = parseWorkload(spec);
  auto steps = search::heuristicSchedule(search::SearchTask(w.dag, target));
  REQUIRE(steps.has_value());
  auto r = sched::replay(w.dag, *steps);
  REQUIRE(r.error.empty());
  auto f = lower::lower(r.state);
  *lowered = lower::toString(f);
  INFO(*lowered);
  auto inputs = ir::randomInputs(w.dag, seed);
  auto got = runJit(*codegen::JitKernel::compile(f, target), f, inputs);
  CHECK(ir::maxRelativeError(got[0], ir::evaluateOutputs(w.dag, inputs)[0]) <= 1e-4);
}

TEST_CASE("heuristic schedules with partial tiles run correctly through LLVM", "[llvm]") {
  // Prime extents: non-dividing row, vector and reduction tiles; the hoisted guards' fast and
  // slow copies both run (the last tile is partial). The pointwise conv's flattened 14 x 14
  // plane (196) has whole vectors, its last one masked.
  for (const char* spec :
       {"gemm:M=197,N=48,K=24", "batch_matmul:B=2,M=37,N=197,K=8",
        "batch_matmul:B=1,M=19,N=32,K=197", "conv2d:C=24,H=14,W=14,K=40,R=1,S=1"}) {
    INFO(spec);
    std::string lowered;
    checkHeuristicJit(spec, 9, &lowered);
    CHECK_THAT(lowered, Catch::Contains("else"));
  }
}

TEST_CASE("the heuristic schedule of a channels-last conv runs correctly through LLVM", "[llvm]") {
  // Output channels as the vector axis, the [N, H, W, K] result read back to NCHW in blocks
  // of K x W: 16 x 12 here, 10 x 7 (stride 2) in the second. The epilogue's K (i1) and W
  // (i3) loops are split into those blocks (the second's outer loops all fuse into the
  // parallel one).
  for (const char* spec : {"conv2d_cl_bias_relu:C=32,H=12,W=12,K=48,R=3,S=3,pad=1",
                           "conv2d_cl_bias_relu:C=16,H=15,W=15,K=40,R=3,S=3,stride=2"}) {
    INFO(spec);
    std::string lowered;
    checkHeuristicJit(spec, 5, &lowered);
    CHECK_THAT(lowered, Catch::Contains("conv2d_cl["));
    CHECK_THAT(lowered, Catch::Contains("i1.1"));
    CHECK_THAT(lowered, Catch::Contains("i3.1 in [0, "));
  }
}

TEST_CASE("a vectorized inner loop becomes vector FMA instructions", "[llvm][asm]") {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  std::vector<sched::Step> steps;
  std::string err;
  REQUIRE(sched::stepsFromJson(
      readFile(std::string(WM_TEST_DATA_DIR) + "/schedules/gemm_cpu_ssrsrs.json"), &steps, &err));
  auto f = lower::lower(sched::replay(w.dag, steps).state);
  std::string avx512 = codegen::emit(f, codegen::resolveTarget({"llvm", "x86-64-v4", "", 2}),
                                     codegen::EmitKind::Assembly);
  // Packed (not scalar) single-precision FMAs.
  CHECK(std::regex_search(avx512, std::regex("vfmadd[0-9]+ps")));
  std::string avx2 = codegen::emit(f, codegen::resolveTarget({"llvm", "haswell", "", 2}),
                                   codegen::EmitKind::Assembly);
  CHECK(std::regex_search(avx2, std::regex("vfmadd[0-9]+ps")));
  // Without vectorize annotations there are no packed FMAs in the inner loop of the naive GEMM.
  auto naive = lower::lower(sched::State(w.dag));
  std::string ir =
      codegen::emit(naive, codegen::resolveTarget({}), codegen::EmitKind::LlvmIr, false);
  CHECK_THAT(ir, Catch::Contains("define void @C(ptr"));
  CHECK_THAT(ir, Catch::Contains("noalias"));
  std::string obj = codegen::emit(naive, codegen::resolveTarget({}), codegen::EmitKind::Object);
  REQUIRE(obj.size() > 4);
  CHECK(obj.substr(0, 4) == "\x7f"
                            "ELF");
}

TEST_CASE("an innermost loop that auto-unroll unrolls whole becomes vectors when its stores are "
          "contiguous, and stays scalar over a reduction",
          "[llvm][asm]") {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  auto target = codegen::resolveTarget({});
  auto inputs = ir::randomInputs(w.dag, 5);
  auto expect = ir::evaluateOutputs(w.dag, inputs);
  auto build = [&](const std::string& json) {
    std::vector<sched::Step> steps;
    std::string err;
    REQUIRE(sched::stepsFromJson(json, &steps, &err));
    auto r = sched::replay(w.dag, steps);
    REQUIRE(r.error.empty());
    return lower::lower(r.state);
  };
  // A register tile of 4 rows x 32 columns with no vectorize annotation: the 32-column loop
  // (unrolled by the pragma) is emitted as <32 x float>, no gathers, and computes C.
  auto tiled = build(R"([["CHW",2,"local"],["SP",2,2,64,[16],1],["SP",2,1,64,[1,1,32],1],)"
                     R"(["SP",2,0,64,[1,4,4],1],["RE",2,[0,4,1,5,8,2,6,9,3,7]],)"
                     R"(["FSP",3,1,2,2],["FSP",3,0,3,2],["RE",3,[0,3,1,4,2,5]],["CA",2,3,3],)"
                     R"(["PR",2,0,"auto_unroll_max_step",64]])");
  std::string raw = codegen::emit(tiled, target, codegen::EmitKind::LlvmIr, false);
  CHECK_THAT(raw, Catch::Contains("<32 x float>"));
  std::string opt = codegen::emit(tiled, target, codegen::EmitKind::LlvmIr, true);
  CHECK_THAT(opt, !Catch::Contains("masked.gather") && !Catch::Contains("masked.scatter"));
  auto got = runJit(*codegen::JitKernel::compile(tiled, target), tiled, inputs);
  CHECK(ir::maxRelativeError(got[0], expect[0]) <= 1e-5);
  // The naive GEMM with the pragma: the innermost loop is the reduction (its store does not
  // move with k), so it is unrolled as scalars, never turned into vectors.
  auto naive = build(R"([["PR",2,0,"auto_unroll_max_step",64]])");
  std::string nraw = codegen::emit(naive, target, codegen::EmitKind::LlvmIr, false);
  CHECK_THAT(nraw, !Catch::Contains("x float>"));
  got = runJit(*codegen::JitKernel::compile(naive, target), naive, inputs);
  CHECK(ir::maxRelativeError(got[0], expect[0]) <= 1e-5);
}

TEST_CASE("f32 exp, sigmoid, tanh and erf are inline arithmetic, within 2-3 ulp of libm, scalar "
          "and vector",
          "[llvm]") {
  // The x86 backend lowers llvm.exp on a vector to one expf call a lane; the code generator
  // computes exp of f32 itself (range reduction, polynomial, exponent bits). Checked against
  // std::exp over the whole range, the edges (underflow to denormals and 0, overflow to inf,
  // +-inf, NaN) and both code paths: a plain loop (scalar code, which LLVM's loop vectorizer may
  // widen) and an explicitly vectorized one.
  std::vector<float> xs{-std::numeric_limits<float>::infinity(),
                        -1e30f,
                        -200.0f,
                        -104.5f,
                        -103.0f,
                        -100.0f,
                        -87.5f,
                        -87.0f,
                        -20.0f,
                        -1.0f,
                        -0.34657f,
                        -1e-6f,
                        0.0f,
                        1e-6f,
                        0.34657f,
                        0.5f,
                        1.0f,
                        3.14159f,
                        20.0f,
                        80.0f,
                        88.0f,
                        88.72f,
                        88.73f,
                        89.0f,
                        1e30f,
                        std::numeric_limits<float>::infinity()};
  for (int k = 0; k < 998; ++k) xs.push_back(-110.0f + 200.0f * static_cast<float>(k) / 997.0f);
  // tanh and erf change form at |x| = 0.9 and 1 and saturate near 4-9: densely over [-6, 6].
  for (int k = 0; k < 2400; ++k) xs.push_back(-6.0f + 12.0f * static_cast<float>(k) / 2399.0f);
  for (float v : {1e-40f, -1e-30f, 0.9f, -0.9f, 1.0f, -1.0f, 3.999f, 4.0f, 9.5f})
    xs.push_back(std::nextafter(v, 0.0f));
  const int64_t n = static_cast<int64_t>(xs.size()) + 1; // + a NaN
  auto x = ir::placeholder("x", {n});
  auto e = ir::compute("e", "", {n}, [&](auto& ax) { return ir::exp(ir::at(x, ax[0])); });
  auto sg = ir::compute("sg", "", {n}, [&](auto& ax) { return ir::sigmoid(ir::at(x, ax[0])); });
  auto th = ir::compute("th", "", {n}, [&](auto& ax) { return ir::tanh(ir::at(x, ax[0])); });
  auto er = ir::compute("er", "", {n}, [&](auto& ax) { return ir::erf(ir::at(x, ax[0])); });
  ir::ComputeDAG dag({e, sg, th, er});
  ir::NDArray in(ir::DType::F32, {n});
  for (size_t i = 0; i < xs.size(); ++i) in.set(static_cast<int64_t>(i), xs[i]);
  in.set(n - 1, std::numeric_limits<double>::quiet_NaN());
  auto target = codegen::resolveTarget({});
  for (bool vectorized : {false, true}) {
    INFO((vectorized ? "vectorized" : "plain"));
    std::vector<sched::Step> steps;
    if (vectorized)
      for (int st : {1, 2, 3, 4}) {
        steps.push_back(sched::SplitStep{st, 0, n, {16}, true});
        steps.push_back(sched::AnnotationStep{st, 1, sched::Annotation::Vectorize});
      }
    auto r = sched::replay(dag, steps);
    REQUIRE(r.error.empty());
    auto f = lower::lower(r.state);
    // No libm call is left (the x86 backend would make one a lane of a vector exp).
    std::string asm_ = codegen::emit(f, target, codegen::EmitKind::Assembly);
    CHECK_THAT(asm_,
               !Catch::Contains("expf") && !Catch::Contains("tanhf") && !Catch::Contains("erff"));
    auto got = runJit(*codegen::JitKernel::compile(f, target), f, {in});
    for (int64_t i = 0; i < n; ++i) {
      float xi = static_cast<float>(in.data()[i]);
      INFO("x = " << xi);
      float want = std::exp(xi), wantSig = 1.0f / (1.0f + std::exp(-xi));
      float wantTanh = static_cast<float>(std::tanh(static_cast<double>(xi)));
      float wantErf = static_cast<float>(std::erf(static_cast<double>(xi)));
      float ge = static_cast<float>(got[0].data()[i]), gs = static_cast<float>(got[1].data()[i]);
      float gt = static_cast<float>(got[2].data()[i]), gr = static_cast<float>(got[3].data()[i]);
      if (std::isnan(want)) {
        CHECK(std::isnan(ge));
        CHECK(std::isnan(gs));
        CHECK(std::isnan(gt));
        CHECK(std::isnan(gr));
        continue;
      }
      auto ulps = [](float a, float b) {
        if (a == b) return 0.0;
        float m = std::max(std::fabs(b), std::numeric_limits<float>::denorm_min());
        return std::fabs(static_cast<double>(a) - b) /
               (std::nextafter(m, std::numeric_limits<float>::infinity()) - m);
      };
      CHECK(ulps(ge, want) <= 2.0);
      CHECK(ulps(gs, wantSig) <= 3.0);
      CHECK(ulps(gt, wantTanh) <= 2.0);
      CHECK(ulps(gr, wantErf) <= 2.0);
    }
  }
}

TEST_CASE("a reduction's update alone is reassociated, so sums, max and min over the innermost "
          "axis become vector code",
          "[llvm][asm]") {
  // Without the flag each row's sum is one serial chain of scalar adds (the norm workload ran
  // 12x slower). The flag goes on the update's add or maxnum/minnum only: exp's polynomial
  // under the sum keeps its order.
  const int64_t rows = 24, cols = 200;
  auto x = ir::placeholder("x", {rows, cols});
  auto body = [&](auto& ax, auto& r) { return ir::at(x, ax[0], r[0]); };
  auto s = ir::reduce("s", "", {rows}, ir::ReduceKind::Sum, {cols},
                      [&](auto& ax, auto& r) { return ir::exp(body(ax, r)); });
  auto mx = ir::reduce("mx", "", {rows}, ir::ReduceKind::Max, {cols}, body);
  auto mn = ir::reduce("mn", "", {rows}, ir::ReduceKind::Min, {cols}, body);
  ir::ComputeDAG dag({s, mx, mn});
  auto f = lower::lower(sched::State(dag));
  auto target = codegen::resolveTarget({"llvm", "x86-64-v4", "", 2});
  std::string raw = codegen::emit(f, target, codegen::EmitKind::LlvmIr, false);
  size_t flagged = 0;
  for (size_t p = raw.find(" reassoc "); p != std::string::npos; p = raw.find(" reassoc ", p + 1))
    ++flagged;
  CHECK(flagged == 3);
  CHECK_THAT(raw, Catch::Contains("fadd reassoc contract float"));
  CHECK_THAT(raw, Catch::Contains("call reassoc nnan nsz contract float @llvm.maxnum.f32"));
  CHECK_THAT(raw, Catch::Contains("call reassoc nnan nsz contract float @llvm.minnum.f32"));
  std::string avx512 = codegen::emit(f, target, codegen::EmitKind::Assembly);
  CHECK(std::regex_search(avx512, std::regex("vaddps\\s+%zmm")));
  CHECK(std::regex_search(avx512, std::regex("vmaxps\\s+%zmm")));
  CHECK(std::regex_search(avx512, std::regex("vminps\\s+%zmm")));
  auto inputs = ir::randomInputs(dag, 3);
  auto expect = ir::evaluateOutputs(dag, inputs);
  // Run on this machine's CPU (x86-64-v4 too where it has AVX-512).
  std::vector<target::Target> runOn{codegen::resolveTarget({})};
  if (hostRuns("x86-64-v4")) runOn.push_back(target);
  for (const auto& t : runOn) {
    INFO("run as " << t.key());
    auto got = runJit(*codegen::JitKernel::compile(f, t), f, inputs);
    REQUIRE(got.size() == 3);
    CHECK(ir::maxRelativeError(got[0], expect[0]) <= 1e-5);
    CHECK(ir::maxRelativeError(got[1], expect[1]) == 0);
    CHECK(ir::maxRelativeError(got[2], expect[2]) == 0);
  }
}

TEST_CASE("a vectorized load with lanes 2 or 3 elements apart is one masked span load and a "
          "shuffle that reads nothing past its last lane",
          "[llvm][asm]") {
  // A stride-2 convolution vectorized along its output row read each lane with a scalar load
  // and an insert. The span load's mask ends at the last lane's element: here that element is
  // the buffer's last, so a load of whole vectors would read past the end.
  for (int64_t stride : {2, 3}) {
    INFO("stride " << stride);
    const int64_t lanes = 16, n = stride * (lanes - 1) + 1;
    auto x = ir::placeholder("x", {n});
    auto y = ir::compute("y", "", {lanes}, [&](auto& ax) {
      return ir::at(x, ax[0] * ir::intImm(stride)) * ir::floatImm(2.0);
    });
    ir::ComputeDAG dag({y});
    auto r = sched::replay(dag, {sched::AnnotationStep{1, 0, sched::Annotation::Vectorize}});
    REQUIRE(r.error.empty());
    auto f = lower::lower(r.state);
    for (auto cpu : {"x86-64-v4", "haswell"}) {
      INFO(cpu);
      auto target = codegen::resolveTarget({"llvm", cpu, "", 2});
      std::string raw = codegen::emit(f, target, codegen::EmitKind::LlvmIr, false);
      CHECK_THAT(raw,
                 Catch::Contains("@llvm.masked.load.v" + std::to_string(stride * lanes) + "f32"));
      CHECK_THAT(raw, Catch::Contains("shufflevector") && !Catch::Contains("insertelement"));
      CHECK_THAT(raw, Catch::Contains("i1 false>")); // the mask stops at the last lane
      if (!hostRuns(cpu)) continue;                  // emitted and checked, not runnable here
      auto inputs = ir::randomInputs(dag, 4);
      auto got = runJit(*codegen::JitKernel::compile(f, target), f, inputs);
      CHECK(ir::maxRelativeError(got[0], ir::evaluateOutputs(dag, inputs)[0]) == 0);
    }
  }
}

// The schedule `json` of dag, lowered: its raw IR for AVX-512 and AVX2 matches `matches`, and
// its JIT result equals `expect` exactly (on the CPUs this host runs).
template <typename Matcher>
void checkVectorSchedule(const ir::ComputeDAG& dag, const char* json,
                         const std::vector<ir::NDArray>& inputs,
                         const std::vector<ir::NDArray>& expect, const Matcher& matches) {
  INFO(json);
  std::vector<sched::Step> steps;
  std::string err;
  REQUIRE(sched::stepsFromJson(json, &steps, &err));
  auto r = sched::replay(dag, steps);
  REQUIRE(r.error.empty());
  auto f = lower::lower(r.state);
  INFO(lower::toString(f));
  for (auto cpu : {"x86-64-v4", "haswell"}) {
    INFO(cpu);
    auto target = codegen::resolveTarget({"llvm", cpu, "", 2});
    CHECK_THAT(codegen::emit(f, target, codegen::EmitKind::LlvmIr, false), matches);
    if (!hostRuns(cpu)) continue;
    auto got = runJit(*codegen::JitKernel::compile(f, target), f, inputs);
    CHECK(ir::maxRelativeError(got[0], expect[0]) == 0);
  }
}

TEST_CASE("a vectorized loop under a partial tile's guard is masked vector code", "[llvm][asm]") {
  // y = 2 x^T with the vectorized axis split by 8 where 8 does not divide it: the last tile's
  // lanes run past the edge. Vectorized along y's columns (13: stores contiguous and masked,
  // loads 37 apart, lane by lane with clamped indices) and along y's rows (37: loads
  // contiguous and masked, stores 13 apart, each under its lane's bit). Before, LLVM's loop
  // vectorizer got these loops and left them scalar.
  auto x = ir::placeholder("x", {13, 37});
  auto y = ir::compute("y", "", {37, 13},
                       [&](auto& ax) { return ir::at(x, ax[1], ax[0]) * ir::floatImm(2.0); });
  ir::ComputeDAG dag({y});
  auto inputs = ir::randomInputs(dag, 3);
  auto expect = ir::evaluateOutputs(dag, inputs);
  struct Case {
    const char* steps;
    const char* contains;
  };
  for (const Case& c :
       {Case{R"([["SP",1,1,13,[8],1],["AN",1,2,"vectorize"]])", "masked.store"},
        Case{R"([["SP",1,0,37,[8],1],["RE",1,[0,2,1]],["AN",1,2,"vectorize"]])", "masked.load"}})
    checkVectorSchedule(dag, c.steps, inputs, expect,
                        Catch::Contains(c.contains) && Catch::Contains("<8 x float>"));
}

TEST_CASE("a vectorized read through a flattened plane's index is one contiguous vector",
          "[llvm][asm]") {
  // y[c, f] = 2 x[c, f / 6, f % 6] (a pointwise conv's read of its NCHW input over the
  // flattened plane) vectorized by 8 along f: the lanes cross x's rows, which lie end to end,
  // so the read is a vector load at offset f ((f / 6) * 6 + f % 6 = f), not eight scalar loads.
  auto x = ir::placeholder("x", {3, 4, 6});
  auto y = ir::compute("y", "", {3, 24}, [&](auto& ax) {
    return ir::at(x, ax[0], ax[1] / 6.0, ax[1] % 6.0) * ir::floatImm(2.0);
  });
  ir::ComputeDAG dag({y});
  auto inputs = ir::randomInputs(dag, 5);
  auto expect = ir::evaluateOutputs(dag, inputs);
  checkVectorSchedule(dag, R"([["SP",1,1,24,[8],1],["AN",1,2,"vectorize"]])", inputs, expect,
                      Catch::Contains("load <8 x float>") && !Catch::Contains("load float"));
}

TEST_CASE("parallel loops run on the thread pool", "[llvm][parallel]") {
  rt::setNumThreads(2);
  auto w = parseWorkload("gemm:M=64,N=32,K=16");
  sched::State s(w.dag);
  REQUIRE(sched::applyStep(s, sched::AnnotationStep{2, 0, sched::Annotation::Parallel}).empty());
  auto f = lower::lower(s);
  CHECK_THAT(codegen::emit(f, codegen::resolveTarget({}), codegen::EmitKind::LlvmIr, false),
             Catch::Contains("wm_parallel_for"));
  auto inputs = ir::randomInputs(w.dag, 9);
  auto kernel = codegen::JitKernel::compile(f, codegen::resolveTarget({}));
  for (int rep = 0; rep < 20; ++rep) {
    auto got = runJit(*kernel, f, inputs);
    REQUIRE(ir::maxRelativeError(got[0], ir::evaluateOutputs(w.dag, inputs)[0]) <= 1e-5);
  }
}

TEST_CASE("the same loop nest gives the same code, whatever the heap addresses",
          "[llvm][determinism]") {
  // Two lowerings of one schedule hold their variables and buffers at different addresses; the
  // parallel closure and everything else must come out identical.
  auto w = parseWorkload("conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1");
  std::vector<sched::Step> steps;
  std::string err;
  REQUIRE(sched::stepsFromJson(
      readFile(std::string(WM_TEST_DATA_DIR) + "/schedules/conv2d_cpu_ssrsrs.json"), &steps, &err));
  auto r = sched::replay(w.dag, steps);
  REQUIRE(r.error.empty());
  auto target = codegen::resolveTarget({});
  std::vector<std::unique_ptr<lower::LoweredFunc>> keep; // keep earlier nodes alive: new addresses
  std::string first;
  for (int i = 0; i < 4; ++i) {
    keep.push_back(std::make_unique<lower::LoweredFunc>(lower::lower(r.state)));
    std::string ir = codegen::emit(*keep.back(), target, codegen::EmitKind::LlvmIr, false);
    if (i == 0)
      first = ir;
    else
      CHECK(ir == first);
  }
  CHECK_THAT(first, Catch::Contains("wm_parallel_for"));
}

TEST_CASE("a GPU schedule given to the CPU code generator is the user's error, not an internal one",
          "[llvm]") {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  std::vector<sched::Step> steps;
  std::string err;
  REQUIRE(sched::stepsFromJson(
      readFile(std::string(WM_TEST_DATA_DIR) + "/schedules/gemm_gpu_sssrrsrs.json"), &steps, &err));
  auto f = lower::lower(sched::replay(w.dag, steps).state);
  CHECK_THROWS_AS(codegen::emit(f, codegen::resolveTarget({}), codegen::EmitKind::LlvmIr, false),
                  UserError);
  CHECK_THROWS_WITH(codegen::emit(f, codegen::resolveTarget({}), codegen::EmitKind::LlvmIr, false),
                    Catch::Contains("is bound to blockIdx.x: a GPU schedule"));
}
