// GPU schedules without a GPU: every schedule the GPU sketch rules and annotator sample (and
// their mutations), over the operator library, splits into kernels within the launch limits
// and computes the reference result under GPU semantics (lower/gpu.h's emulator: threads in
// phases between barriers, shared buffers per block, local ones per thread), race-free. The
// emulator itself is checked on planted bugs: a missing barrier and a wrong thread index.
#include "../support/random_schedule.h"

#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/ir/visitor.h>
#include <wm/lower/gpu.h>
#include <wm/lower/lower.h>
#include <wm/schedule/default_schedule.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/search/evolution.h>
#include <wm/search/sketch.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

using namespace wm;
using namespace wm::search;

namespace {

lower::GpuLaunchLimits limitsOf(const target::Target& t) {
  lower::GpuLaunchLimits l;
  l.maxThreadsPerBlock = t.gpu.maxThreadsPerBlock;
  l.sharedBytesPerBlock = t.gpu.sharedBytesPerBlock;
  return l;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + "\n";
  return s;
}

// One sampled GEMM schedule with shared cache reads (the planted-bug tests' subject).
lower::GpuProgram sharedGemm(std::vector<ir::NDArray>* inputs, std::vector<ir::NDArray>* expect) {
  auto w = parseWorkload("gemm:M=16,N=16,K=16");
  SearchTask task(w.dag, target::gpuDefaults());
  auto sk = generateSketches(task);
  Rng rng(5);
  *inputs = ir::randomInputs(w.dag, 3);
  *expect = ir::evaluateOutputs(w.dag, *inputs);
  for (int k = 0; k < 200; ++k) {
    auto s = annotate(task, sk[0], rng);
    if (!s) continue;
    auto p = lower::splitKernels(lower::lower(*s), limitsOf(task.target));
    std::string text = lower::toString(p.kernels[0].body);
    if (p.kernels[0].block[0] >= 4 && text.find("barrier") != std::string::npos) return p;
  }
  FAIL("no GEMM schedule with shared buffers and 4+ threads sampled");
  return {};
}

// Statements the emulator runs for the whole program.
double emulatedWork(const lower::GpuProgram& p) {
  double w = 0;
  for (auto& k : p.kernels)
    w += testing::loopWork(k.body, true) * double(k.grid[0] * k.grid[1] * k.grid[2]) *
         double(k.block[0] * k.block[1] * k.block[2]);
  return w;
}

// Rebuilds every kernel body through a mutator.
void rewrite(lower::GpuProgram& p, lower::StmtMutator&& m) {
  for (auto& k : p.kernels) k.body = m.mutate(k.body);
}

} // namespace

TEST_CASE("every sampled or mutated GPU schedule of every operator computes the reference "
          "result under GPU semantics, race-free",
          "[gpu][property]") {
  Rng rng(2027);
  const target::Target hw = target::gpuDefaults();
  int checked = 0, sharedOnes = 0, crossThread = 0;
  auto specs = testing::smallWorkloads();
  // Reductions long enough for the cross-thread reduction sketch (a warp per row).
  for (const char* s : {"softmax:M=4,N=512", "layer_norm:M=2,N=256", "norm:M=3,N=300"})
    specs.push_back(s);
  for (const auto& spec : specs) {
    auto w = parseWorkload(spec);
    SearchTask task(w.dag, hw);
    auto sk = generateSketches(task);
    REQUIRE(!sk.empty());
    auto inputs = ir::randomInputs(w.dag, rng.next());
    auto expect = ir::evaluateOutputs(w.dag, inputs);
    int valid = 0;
    auto check = [&](const sched::State& state, const char* what) {
      INFO(spec << " (" << what << ")\n" << sched::stepsToJson(state.steps()));
      auto f = lower::lower(sched::replay(w.dag, state.steps()).state);
      lower::GpuProgram p;
      REQUIRE_NOTHROW(p = lower::splitKernels(f, limitsOf(hw)));
      if (emulatedWork(p) > 1e6) return false; // too large to emulate quickly
      auto got = lower::emulateGpu(p, inputs);
      INFO(lower::toString(f));
      REQUIRE(joined(got.problems) == "");
      for (size_t o = 0; o < got.outputs.size(); ++o)
        REQUIRE(ir::maxRelativeError(got.outputs[o], expect[o]) <= 1e-4);
      for (auto& k : p.kernels) {
        sharedOnes += k.sharedBytes > 0;
        crossThread += lower::toString(k.body).find(".red: ") != std::string::npos;
      }
      ++checked;
      return true;
    };
    for (int k = 0; k < 3000 && valid < 10; ++k) {
      const auto& sketch = sk[rng.uniformInt(0, static_cast<int64_t>(sk.size()) - 1)];
      auto state = annotate(task, sketch, rng);
      if (!state) continue;
      if (!check(*state, "sampled")) continue;
      ++valid;
      for (int m = 0; m < 2; ++m)
        if (auto mutated = mutate(task, *state, rng)) check(*mutated, "mutated");
    }
    INFO(spec);
    CHECK(valid > 0);
  }
  CHECK(checked >= 500);
  CHECK(sharedOnes >= 100);
  CHECK(crossThread >= 10);
}

TEST_CASE("the default GPU schedule of every operator computes the reference result, race-free",
          "[gpu]") {
  const target::Target hw = target::gpuDefaults();
  for (const auto& spec : testing::smallWorkloads()) {
    INFO(spec);
    auto w = parseWorkload(spec);
    auto steps = sched::defaultGpuSchedule(w.dag, 64);
    auto r = sched::replay(w.dag, steps);
    REQUIRE(r.error == "");
    lower::GpuProgram p;
    REQUIRE_NOTHROW(p = lower::splitKernels(lower::lower(r.state), limitsOf(hw)));
    for (auto& k : p.kernels) CHECK(k.block[0] * k.block[1] * k.block[2] <= 64);
    auto inputs = ir::randomInputs(w.dag, 11);
    auto expect = ir::evaluateOutputs(w.dag, inputs);
    auto got = lower::emulateGpu(p, inputs);
    REQUIRE(joined(got.problems) == "");
    for (size_t o = 0; o < got.outputs.size(); ++o)
      CHECK(ir::maxRelativeError(got.outputs[o], expect[o]) <= 1e-4);
  }
}

TEST_CASE("the emulator catches a missing barrier and a wrong thread index", "[gpu]") {
  std::vector<ir::NDArray> inputs, expect;
  auto good = sharedGemm(&inputs, &expect);
  auto ok = lower::emulateGpu(good, inputs);
  REQUIRE(joined(ok.problems) == "");
  REQUIRE(ir::maxRelativeError(ok.outputs[0], expect[0]) <= 1e-5);

  SECTION("no barriers") {
    struct : lower::StmtMutator {
      lower::Stmt mutateBarrier(const lower::BarrierNode*, const lower::Stmt&) override {
        return lower::makeSeq({});
      }
    } drop;
    auto bad = good;
    rewrite(bad, std::move(drop));
    auto r = lower::emulateGpu(bad, inputs);
    REQUIRE(!r.problems.empty());
    CHECK_THAT(r.problems[0], Catch::Contains("race on") && Catch::Contains("shared"));
  }
  SECTION("a cooperative fetch indexed by threadIdx.x / 2") {
    // The innermost threadIdx.x loop (a fetch into shared memory) uses half the thread index.
    struct Halve : lower::StmtMutator {
      lower::Stmt mutateFor(const lower::ForNode* op, const lower::Stmt& self) override {
        lower::Stmt s = lower::StmtMutator::mutateFor(op, self);
        if (done || op->threadTag != "threadIdx.x") return s;
        done = true;
        ir::Var v = op->var;
        struct Sub : lower::StmtMutator {
          ir::Var v;
          ir::Expr mutateExpr(const ir::Expr& e) override {
            return ir::substitute(e, {{v.node(), ir::Expr(v) / 2.0}});
          }
        } sub;
        sub.v = v;
        return lower::makeFor(v, op->extent, op->forKind, op->threadTag, sub.mutate(op->body));
      }
      bool done = false;
    } halve;
    auto bad = good;
    rewrite(bad, std::move(halve));
    auto r = lower::emulateGpu(bad, inputs);
    REQUIRE(!r.problems.empty());
    CHECK_THAT(r.problems[0],
               Catch::Contains("race on") && Catch::Contains("writes what another wrote"));
  }
}

TEST_CASE("launch limits are schedule errors before anything is compiled", "[gpu]") {
  std::vector<ir::NDArray> inputs, expect;
  auto p = sharedGemm(&inputs, &expect);
  lower::GpuLaunchLimits tight;
  tight.maxThreadsPerBlock = 2;
  CHECK_THROWS_WITH(lower::splitKernels(p.func, tight),
                    Catch::Contains("threads per block; the device allows 2"));
  lower::GpuLaunchLimits noShared;
  noShared.sharedBytesPerBlock = 16;
  CHECK_THROWS_WITH(lower::splitKernels(p.func, noShared),
                    Catch::Contains("bytes of shared memory per block; the device allows 16"));
}
