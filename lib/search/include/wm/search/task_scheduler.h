// The task scheduler (Ansor's): which task gets the next round of measurements. Every task
// gets one warm-up round first; then "gradient" picks the task whose weighted latency is
// expected to fall most per trial (a backward estimate from the last rounds mixed with a
// forward bound from the best attainable rate; ties at random), "round-robin" the task with
// the fewest trials.
#pragma once

#include <wm/support/rng.h>

#include <cstdint>
#include <string>
#include <vector>

namespace wm::search {

struct TaskScheduleState {
  double weight = 1;
  int64_t flops = 0;
  double best = 0; ///< seconds; 0 if nothing valid yet
  int trials = 0;
  std::vector<double> bestHistory; ///< best latency after each of the task's rounds
  bool exhausted = false;          ///< its search space has nothing left to propose
};

struct TaskSchedulerOptions {
  std::string strategy = "gradient";
  double alpha = 0.2;
  double beta = 2.0;
  int backwardWindow = 3;
};

class TaskScheduler {
public:
  TaskScheduler(TaskSchedulerOptions opts, uint64_t seed) : opts_(std::move(opts)), rng_(seed) {}
  /// The next task, or -1 when every task is exhausted.
  int pick(const std::vector<TaskScheduleState>& tasks);

private:
  TaskSchedulerOptions opts_;
  Rng rng_;
};

} // namespace wm::search
