// The world model (libtorch; in the one libtorch test binary): features, training on a
// synthetic task whose latency is a known function of the steps, checkpoints, prefix-shared
// scoring, and the ranking metrics.
#include <torch/torch.h>
#undef CHECK

#include <wm/costmodel/metrics.h>
#include <wm/costmodel/world_model.h>
#include <wm/frontend/workload.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/search/sketch.h>
#include <wm/support/error.h>
#include <wm/support/rng.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

using namespace wm;

namespace {

// Latency as a known function of the steps: the innermost factor of every split near 8, a
// parallel loop, and an unroll pragma of 16-64 are fast; everything else costs.
double syntheticCost(const std::vector<sched::Step>& steps) {
  double cost = 1;
  bool parallel = false;
  for (auto& s : steps) {
    if (auto* sp = std::get_if<sched::SplitStep>(&s)) {
      if (!sp->lengths.empty() && sp->lengths.back() > 0)
        cost += std::abs(std::log2(static_cast<double>(sp->lengths.back())) - 3.0);
    } else if (auto* an = std::get_if<sched::AnnotationStep>(&s)) {
      parallel |= an->annotation == sched::Annotation::Parallel;
    } else if (auto* pr = std::get_if<sched::PragmaStep>(&s)) {
      cost += pr->value >= 16 && pr->value <= 64 ? 0 : 1.5;
    }
  }
  return parallel ? cost : cost * 3;
}

struct Data {
  Workload w;
  std::vector<std::vector<sched::Step>> steps;
  std::vector<double> costs;
};

Data makeData(int n, uint64_t seed) {
  Data d{parseWorkload("gemm:M=64,N=64,K=64"), {}, {}};
  search::SearchTask task(d.w.dag, target::ansorCpuDefaults(2));
  auto sketches = search::generateSketches(task);
  Rng rng(seed);
  for (int i = 0; static_cast<int>(d.steps.size()) < n && i < 20 * n; ++i) {
    auto s = search::annotate(task, sketches[static_cast<size_t>(i) % sketches.size()], rng);
    if (!s) continue;
    d.steps.push_back(s->steps());
    d.costs.push_back(syntheticCost(s->steps()));
  }
  return d;
}

double pairwise(const std::vector<double>& costs, const std::vector<double>& scores) {
  costmodel::TaskEval e{1, costs, scores};
  return costmodel::rankingMetrics({e}).pairwise;
}

costmodel::WorldModelOptions smallOptions() {
  costmodel::WorldModelOptions o;
  o.latent = 32;
  o.hidden = 64;
  o.threads = 2;
  o.seed = 3;
  o.batchTasks = 1;
  o.batchPerTask = 128;
  return o;
}

} // namespace

TEST_CASE("world model: features have the documented sizes", "[worldmodel]") {
  auto d = makeData(4, 1);
  CHECK(costmodel::stageFeatures(d.w.dag).size() == d.w.dag.size() * costmodel::kStageDim);
  for (size_t i = 0; i < d.steps[0].size(); ++i)
    CHECK(costmodel::actionFeatures(d.steps[0], i, static_cast<int>(d.w.dag.size())).size() ==
          static_cast<size_t>(costmodel::kActionDim));
  CHECK(costmodel::HardwareFeatures::of(target::ansorCpuDefaults(2)).vector().size() ==
        static_cast<size_t>(costmodel::kHardwareDim));
}

TEST_CASE("world model: training lifts pairwise accuracy on a synthetic task to >= 0.9",
          "[worldmodel]") {
  for (const char* transition : {"mlp", "gru"}) {
    INFO("transition " << transition);
    auto train = makeData(400, 11), test = makeData(200, 12);
    auto o = smallOptions();
    o.transition = transition;
    costmodel::WorldModel model(o, costmodel::HardwareFeatures::of(target::ansorCpuDefaults(2)));
    double before = pairwise(test.costs, model.score(test.w.dag, test.steps));
    std::vector<costmodel::MeasuredRecord> recs;
    for (size_t i = 0; i < train.steps.size(); ++i)
      recs.push_back({"synthetic", &train.w.dag, train.steps[i], train.costs[i]});
    model.addSamples(recs);
    model.train(900);
    double after = pairwise(test.costs, model.score(test.w.dag, test.steps));
    INFO("held-out pairwise accuracy before " << before << ", after " << after);
    CHECK(std::abs(before - 0.5) < 0.2);
    CHECK(after >= 0.9);
  }
}

TEST_CASE("world model: the dynamics objective teaches the latents the loop state",
          "[worldmodel]") {
  // z_t after each step is trained to predict loopFeatures of the state the first t steps make;
  // held-out step lists measure it: trained with the objective, the error drops well below
  // that of the same training without it (whose dynamics head never learns)
  auto train = makeData(200, 21), test = makeData(60, 22);
  std::vector<costmodel::MeasuredRecord> recs, held;
  for (size_t i = 0; i < train.steps.size(); ++i)
    recs.push_back({"synthetic", &train.w.dag, train.steps[i], train.costs[i]});
  for (size_t i = 0; i < test.steps.size(); ++i)
    held.push_back({"synthetic", &test.w.dag, test.steps[i], test.costs[i]});
  double err[2];
  for (int on = 0; on < 2; ++on) {
    auto o = smallOptions();
    o.dynamics = on ? 1.0 : 0.0;
    o.batchPerTask = 32;
    costmodel::WorldModel model(o, costmodel::HardwareFeatures::of(target::ansorCpuDefaults(2)));
    model.addSamples(recs);
    model.train(200);
    err[on] = model.dynamicsError(held);
  }
  INFO("held-out dynamics error without the objective " << err[0] << ", with it " << err[1]);
  CHECK(err[1] > 0);
  CHECK(err[1] < 0.25 * err[0]);
}

TEST_CASE("world model: prefix-shared scoring equals scoring one at a time", "[worldmodel]") {
  auto d = makeData(40, 5);
  costmodel::WorldModel model(smallOptions(),
                              costmodel::HardwareFeatures::of(target::ansorCpuDefaults(2)));
  auto batch = model.score(d.w.dag, d.steps);
  for (size_t i = 0; i < d.steps.size(); i += 7) {
    auto one = model.score(d.w.dag, {d.steps[i]});
    CHECK(one[0] == Approx(batch[i]).margin(1e-4));
  }
  // predict() on states is the same as score() on their steps
  std::vector<sched::State> states;
  for (auto& s : d.steps) states.push_back(sched::replay(d.w.dag, s).state);
  auto viaStates = model.predict("k", states);
  for (size_t i = 0; i < states.size(); ++i) CHECK(viaStates[i] == Approx(batch[i]).margin(1e-4));
}

TEST_CASE("world model: checkpoints round-trip and refuse other formats", "[worldmodel]") {
  auto d = makeData(20, 6);
  std::string path = "wm_test_checkpoint.pt";
  costmodel::WorldModel model(smallOptions(),
                              costmodel::HardwareFeatures::of(target::ansorCpuDefaults(2)));
  model.save(path);
  auto o = smallOptions();
  o.latent = 999; // the checkpoint's own sizes win
  o.init = path;
  costmodel::WorldModel loaded(o, costmodel::HardwareFeatures::of(target::ansorCpuDefaults(2)));
  auto a = model.score(d.w.dag, d.steps), b = loaded.score(d.w.dag, d.steps);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(1e-6));
  {
    std::ofstream f("wm_not_a_checkpoint.pt");
    f << "hello";
  }
  o.init = "wm_not_a_checkpoint.pt";
  try {
    costmodel::WorldModel bad(o, costmodel::HardwareFeatures::of(target::ansorCpuDefaults(2)));
    FAIL("a non-checkpoint loaded");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("not a world-model checkpoint") != std::string::npos);
  }
  std::remove(path.c_str());
  std::remove("wm_not_a_checkpoint.pt");
}

TEST_CASE("ranking metrics follow TenSet's definitions", "[worldmodel]") {
  costmodel::TaskEval perfect{1, {1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1}};
  auto m = costmodel::rankingMetrics({perfect});
  CHECK(m.pairwise == 1.0);
  CHECK(m.top1 == 1.0);
  costmodel::TaskEval reversed{1, {1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}};
  m = costmodel::rankingMetrics({reversed});
  CHECK(m.pairwise == 0.0);
  CHECK(m.top1 == Approx(1.0 / 6));
  CHECK(m.top5 == Approx(1.0 / 2)); // the top 5 by score are costs 6..2
  CHECK(m.top1Task == Approx(1.0 / 6));
  // a slow task ranked perfectly dominates the latency-weighted score, not the per-task mean
  costmodel::TaskEval slow{1, {100, 200}, {2, 1}}, fast{1, {1, 4}, {1, 2}};
  m = costmodel::rankingMetrics({slow, fast});
  CHECK(m.top1 == Approx(101.0 / 104));
  CHECK(m.top1Task == Approx((1 + 0.25) / 2));
  CHECK(m.top5Task == 1.0);
}

TEST_CASE("world model: every step is tied to the initial op its stage was made from",
          "[worldmodel]") {
  // cache_write (CPU multi-level tiling), rfactor (CPU reductions) and cache_read (GPU shared
  // memory) insert stages; the op of a later step is read from the stage's name ("C.local",
  // "A.shared", "C.rf" belong to C, A, C), independently of the index bookkeeping.
  struct Case {
    const char* spec;
    target::Target target;
  };
  std::vector<Case> cases{
      {"gemm:M=64,N=64,K=64", target::ansorCpuDefaults(2)},
      {"softmax:M=4,N=4096", target::ansorCpuDefaults(2)},
      {"layer_norm:M=2,N=8192", target::ansorCpuDefaults(2)},
      {"gemm:M=128,N=128,K=128", target::gpuDefaults()},
      {"conv2d_bias_relu:N=1,C=16,H=14,W=14,K=32,R=3,S=3,pad=1", target::gpuDefaults()}};
  int inserted = 0, shifted = 0;
  for (auto& c : cases) {
    Workload w = parseWorkload(c.spec);
    search::SearchTask task(w.dag, c.target);
    auto sketches = search::generateSketches(task);
    Rng rng(5);
    int numStages = static_cast<int>(w.dag.size());
    for (int i = 0; i < 40; ++i) {
      auto s = search::annotate(task, sketches[static_cast<size_t>(i) % sketches.size()], rng);
      if (!s) continue;
      const auto& steps = s->steps();
      auto ops = costmodel::initialOpOfSteps(steps, steps.size(), numStages);
      REQUIRE(ops.size() == steps.size());
      sched::State st(w.dag);
      for (size_t k = 0; k < steps.size(); ++k) {
        int stage = sched::stepStage(steps[k]);
        REQUIRE(stage >= 0);
        REQUIRE(stage < st.numStages());
        std::string name = st.stage(stage).op->name;
        std::string base = name.substr(0, name.find('.'));
        INFO(c.spec << " step " << k << ": " << sched::toString(steps[k]));
        CHECK(base == w.dag.op(static_cast<int>(ops[k])).name);
        shifted += ops[k] != stage;
        int before = st.numStages();
        REQUIRE(sched::applyStep(st, steps[k]).empty());
        inserted += st.numStages() > before;
      }
    }
  }
  // the cases exercise the bookkeeping: stages were inserted and later steps moved
  CHECK(inserted > 0);
  CHECK(shifted > 0);
}

TEST_CASE("world model: loop-state features read the loops the steps made", "[worldmodel]") {
  using namespace sched;
  Workload w = parseWorkload("gemm:M=64,N=48,K=32");
  auto lg = [](double x, double scale) { return static_cast<float>(std::log2(x + 1) / scale); };
  auto build = [&](const std::vector<Step>& steps) {
    State st(w.dag);
    for (auto& s : steps) REQUIRE(applyStep(st, s).empty());
    return costmodel::loopFeatures(st, 2);
  };
  // C: i (parallel), j.0, k, j.1 (vectorized: j is the output's innermost axis)
  std::vector<Step> steps{SplitStep{2, 1, 48, {16}, true}, ReorderStep{2, {0, 1, 3, 2}},
                          AnnotationStep{2, 0, Annotation::Parallel},
                          AnnotationStep{2, 3, Annotation::Vectorize}};
  auto f = build(steps);
  REQUIRE(f.size() == static_cast<size_t>(costmodel::kLoopDim));
  CHECK(f[0] == Approx(lg(64, 12)));
  CHECK(f[1] == Approx(1.0));
  CHECK(f[2] == Approx(lg(16, 6)));
  CHECK(f[3] == 1.f);
  CHECK(f[4] == Approx(lg(16, 8)));
  CHECK(f[5] == 0.f);
  CHECK(f[7] == Approx(4.0 / 16));
  CHECK(f[10] == Approx(lg(16, 10)));
  CHECK(f[11] == Approx(lg(48 * 32, 24)));
  CHECK(f[12] == Approx(lg(64 * 48 * 32, 30)));
  CHECK(f[13] == Approx(1.0 / 8));
  // one computed stage: the mean is the stage itself
  for (int k = 0; k < costmodel::kLoopPerStage; ++k)
    CHECK(f[static_cast<size_t>(costmodel::kLoopPerStage + k)] ==
          Approx(f[static_cast<size_t>(k)]));

  // the vector loop on a split of i (a strided store), 3 parallel iterations on 2 cores
  auto g = build({SplitStep{2, 0, 64, {16}, true}, SplitStep{2, 2, 48, {3}, false},
                  ReorderStep{2, {2, 0, 3, 4, 1}}, AnnotationStep{2, 0, Annotation::Parallel},
                  AnnotationStep{2, 4, Annotation::Vectorize}});
  CHECK(g[0] == Approx(lg(3, 12)));
  CHECK(g[1] == Approx(0.75));
  CHECK(g[2] == Approx(lg(16, 6)));
  CHECK(g[3] == 0.f);

  // a cache-write stage computed at the output's parallel loop inherits its parallel degree
  auto h = build({CacheWriteStep{2, ir::MemScope::Local},
                  AnnotationStep{3, 0, Annotation::Parallel}, ComputeAtStep{2, 3, 0}});
  // main stage: C.local (64·48·32 iterations, more than the copy's 64·48)
  CHECK(h[0] == Approx(lg(64, 12)));
  CHECK(h[8] == 1.f);
  CHECK(h[9] == 1.f);
  CHECK(h[12] == Approx(lg(64 * 48 * 32, 30)));
  CHECK(h[costmodel::kLoopPerStage + 8] == Approx(0.5)); // one of two stages attached
}
