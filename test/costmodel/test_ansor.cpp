// The `ansor` cost model: the feature layout (164 values per store), and that the model learns
// a ranking from measurements: trained on sampled GEMM schedules whose cost is a fixed
// function of their loop nest, it orders unseen schedules better than chance.
#include "../support/random_schedule.h"

#include <wm/costmodel/ansor_features.h>
#include <wm/costmodel/cost_model.h>
#include <wm/frontend/workload.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>

#include <catch2/catch.hpp>

using namespace wm;

namespace {
// A stand-in for a measurement: work of the nest, 4x cheaper when vectorized, 2x when parallel.
double fakeCost(const lower::LoweredFunc& f) {
  std::string text = lower::toString(f);
  double c = testing::loopWork(f.body);
  if (text.find("vectorized") != std::string::npos) c /= 4;
  if (text.find("parallel") != std::string::npos) c /= 2;
  return c * 1e-9;
}
} // namespace

TEST_CASE("ansor features: one row of 164 per store", "[ansor]") {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  auto f = lower::lower(sched::State(w.dag));
  auto rows = costmodel::extractAnsorFeatures(f);
  REQUIRE(rows.size() == 2); // init and update of C
  CHECK(rows[0].size() == 164);
  // The update does 64^3 float multiply-adds: log2(64^3 + 1) in the first count.
  CHECK(rows[1][0] == Approx(std::log2(64.0 * 64 * 64 + 1)).epsilon(1e-4));
  CHECK(rows[0][0] == 0.0f);
  CHECK(std::string(costmodel::kAnsorFeatureLayout) == "ansor-164-v1");
}

TEST_CASE("the ansor model learns to rank schedules", "[ansor]") {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  search::SearchTask task(w.dag, target::ansorCpuDefaults(2));
  auto sketches = search::generateSketches(task);
  Rng rng(11);
  std::vector<sched::State> states;
  std::vector<double> costs;
  for (int i = 0; states.size() < 200 && i < 2000; ++i) {
    auto s = search::annotate(task, sketches[i % sketches.size()], rng);
    if (!s) continue;
    states.push_back(*s);
    costs.push_back(fakeCost(lower::lower(*s)));
  }
  REQUIRE(states.size() == 200);
  costmodel::AnsorModelOptions o;
  o.minSamples = 50;
  auto model = costmodel::makeAnsorModel(o);
  std::vector<costmodel::MeasuredRecord> train;
  for (int i = 0; i < 150; ++i) train.push_back({task.key, &w.dag, states[i].steps(), costs[i]});
  model->update(train);
  std::vector<sched::State> test(states.begin() + 150, states.end());
  auto scores = model->predict(task.key, test);
  int right = 0, pairs = 0;
  for (size_t a = 0; a < test.size(); ++a)
    for (size_t b = a + 1; b < test.size(); ++b) {
      double ca = costs[150 + a], cb = costs[150 + b];
      if (ca == cb) continue;
      ++pairs;
      right += (ca < cb) == (scores[a] > scores[b]);
    }
  double accuracy = static_cast<double>(right) / pairs;
  INFO("pairwise accuracy on held-out schedules: " << accuracy);
  CHECK(accuracy > 0.7);
}
