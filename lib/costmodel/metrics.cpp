#include <wm/costmodel/metrics.h>

#include <algorithm>
#include <numeric>

namespace wm::costmodel {

RankingMetrics rankingMetrics(const std::vector<TaskEval>& tasks) {
  RankingMetrics m;
  double correct = 0, num1 = 0, den1 = 0, num5 = 0, den5 = 0;
  for (auto& t : tasks) {
    size_t n = t.costs.size();
    if (n == 0) continue;
    ++m.tasks;
    m.samples += static_cast<int>(n);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        if (t.costs[i] == t.costs[j]) continue;
        ++m.pairs;
        bool iFaster = t.costs[i] < t.costs[j];
        if (t.scores[i] == t.scores[j])
          correct += 0.5;
        else if ((t.scores[i] > t.scores[j]) == iFaster)
          correct += 1;
      }
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return t.scores[a] > t.scores[b]; });
    double best = *std::min_element(t.costs.begin(), t.costs.end());
    auto bestOfTop = [&](size_t k) {
      double b = t.costs[order[0]];
      for (size_t i = 1; i < std::min(k, n); ++i) b = std::min(b, t.costs[order[i]]);
      return b;
    };
    num1 += t.weight * best;
    den1 += t.weight * bestOfTop(1);
    num5 += t.weight * best;
    den5 += t.weight * bestOfTop(5);
    m.top1Task += best / bestOfTop(1);
    m.top5Task += best / bestOfTop(5);
  }
  m.pairwise = m.pairs ? correct / m.pairs : 0;
  m.top1 = den1 > 0 ? num1 / den1 : 0;
  m.top5 = den5 > 0 ? num5 / den5 : 0;
  if (m.tasks) {
    m.top1Task /= m.tasks;
    m.top5Task /= m.tasks;
  }
  return m;
}

} // namespace wm::costmodel
