// Offline ranking metrics of a cost model on measured data (TenSet's definitions).
#pragma once

#include <vector>

namespace wm::costmodel {

struct TaskEval {
  double weight = 1;
  std::vector<double> costs;  ///< true median latencies (valid measurements only)
  std::vector<double> scores; ///< the model's scores (higher = predicted faster)
};

struct RankingMetrics {
  double pairwise = 0;       ///< share of pairs with different costs ordered correctly
  double top1 = 0, top5 = 0; ///< Σ w·best cost / Σ w·best cost among the model's top k
  /// the mean over tasks of best cost / best cost among the top k (every task counts the
  /// same, where top1/top5 let the slowest task dominate)
  double top1Task = 0, top5Task = 0;
  int tasks = 0, samples = 0, pairs = 0;
};

RankingMetrics rankingMetrics(const std::vector<TaskEval>& tasks);

} // namespace wm::costmodel
