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
}
