// The task scheduler (see task_scheduler.h).
#include <wm/search/task_scheduler.h>

#include <algorithm>
#include <cmath>

namespace wm::search {

int TaskScheduler::pick(const std::vector<TaskScheduleState>& st) {
  int nt = static_cast<int>(st.size());
  for (int i = 0; i < nt; ++i)
    if (!st[i].exhausted && st[i].bestHistory.empty()) return i; // warm-up round
  std::vector<int> live;
  for (int i = 0; i < nt; ++i)
    if (!st[i].exhausted) live.push_back(i);
  if (live.empty()) return -1;
  if (opts_.strategy == "round-robin") {
    int best = live[0];
    for (int i : live)
      if (st[i].trials < st[best].trials) best = i;
    return best;
  }
  // Ansor's gradient: d(sum w*g)/d(trials) estimated backward from the recent rounds and
  // forward from the attainable rate; the most negative wins, ties at random.
  double bestRate = 0;
  for (int i = 0; i < nt; ++i)
    if (st[i].best > 0) bestRate = std::max(bestRate, st[i].flops / st[i].best);
  std::vector<std::pair<double, int>> grads;
  for (int i : live) {
    double g = st[i].best > 0 ? st[i].best : 1e10;
    const auto& h = st[i].bestHistory;
    double backward = 0;
    int w = opts_.backwardWindow;
    if (static_cast<int>(h.size()) > w) backward = (h.back() - h[h.size() - 1 - w]) / w;
    double t = std::max(1, st[i].trials);
    double forward = g * (1 - 1.0 / t);
    if (bestRate > 0) forward = std::min(forward, opts_.beta * st[i].flops / bestRate);
    forward -= g;
    grads.push_back({st[i].weight * (opts_.alpha * backward + (1 - opts_.alpha) * forward), i});
  }
  double lo = std::min_element(grads.begin(), grads.end())->first;
  std::vector<int> ties;
  for (auto& [gr, i] : grads)
    if (gr <= lo + 1e-12 * std::abs(lo)) ties.push_back(i);
  return ties[rng_.uniformInt(0, static_cast<int64_t>(ties.size()) - 1)];
}

} // namespace wm::search
