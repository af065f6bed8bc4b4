// The cost-model interface (STYLE.md 8): a narrow batch interface that the search calls.
// update() learns from measured records; predict() scores states of one task (higher is
// better, normalized throughput-like; failed or invalid states get -inf). Models: `random`
// (here), `ansor` (static features + gradient-boosted trees, next) and the world model.
#pragma once

#include <wm/schedule/state.h>

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
  virtual std::vector<double> predict(const std::string& taskKey, const std::vector<sched::State>& states) = 0;
};

/// Uniform random scores from a seeded generator (the baseline and the test model).
std::unique_ptr<CostModel> makeRandomModel(uint64_t seed);

} // namespace wm::costmodel
