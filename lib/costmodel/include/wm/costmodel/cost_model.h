// The cost-model interface (STYLE.md 8): a narrow batch interface that the search calls.
// update() learns from measured records; predict() scores states of one task (higher is
// better, normalized throughput-like; failed or invalid states get -inf). Models: `random`
// (here), `ansor` (static features + gradient-boosted trees, below) and the world model
// (world_model.h); factory.h makes any of them by name.
//
// How to add a cost model: docs/contributing.md ("A cost model").
#pragma once

#include <wm/schedule/state.h>
#include <wm/support/options.h>

#include <memory>
#include <string>
#include <vector>

namespace wm::costmodel {

struct MeasuredRecord {
  std::string taskKey;
  const ir::ComputeDAG* dag = nullptr; ///< the task's DAG (valid during update)
  std::vector<sched::Step> steps;
  double cost = 0; ///< median seconds; <= 0 or infinite for a failed measurement
};

class CostModel {
public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  virtual void update(const std::vector<MeasuredRecord>& records) = 0;
  virtual std::vector<double> predict(const std::string& taskKey,
                                      const std::vector<sched::State>& states) = 0;
};

/// Uniform random scores from a seeded generator (the baseline and the test model).
std::unique_ptr<CostModel> makeRandomModel(uint64_t seed);

} // namespace wm::costmodel

namespace wm::costmodel {

struct AnsorModelOptions {
  int minSamples = 64; ///< predictions are random until this many measured samples
  int rounds = 60;     ///< boosting rounds per retraining
  int maxDepth = 10;
  double eta = 0.2;
  double gamma = 0.001;
  double minChildWeight = 0;
  uint64_t seed = 0;
};
const OptionTable<AnsorModelOptions>& ansorModelOptionTable();

/// Ansor's cost model: per-store static features of the lowered loop nest
/// (ansor_features.h), gradient-boosted trees (XGBoost), trained on per-task normalized
/// throughput (best cost in the task / cost; failures 0) with a pack-sum objective (a
/// program's score is the sum of its rows' predictions; squared error weighted by the label);
/// fully retrained after each update. One model for all tasks.
std::unique_ptr<CostModel> makeAnsorModel(const AnsorModelOptions& opts = {});

} // namespace wm::costmodel
