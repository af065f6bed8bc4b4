// Schedules of a model's tasks for the commands that compile a whole model (run, export):
// the best record of each task in a tuning log, and for the tasks it lacks the world model's
// pick (--untuned guess) — one definition, so that run and export build the same kernels.
#include "commands.h"

#include <wm/costmodel/factory.h>
#include <wm/frontend/model.h>
#include <wm/search/evolution.h>
#include <wm/search/heuristic.h>
#include <wm/search/tuning_log.h>

#include <spdlog/spdlog.h>

#include <iostream>

namespace wm::cli {

std::map<std::string, std::vector<sched::Step>> bestSchedules(const std::string& path,
                                                              const target::Target& t) {
  search::TuningLog log(path, search::TuningLog::Mode::Read);
  int other = 0;
  std::map<std::string, std::vector<sched::Step>> out;
  for (auto& [key, rec] : search::bestRecords(log.records(), t, &other)) out[key] = rec->steps;
  if (other > 0)
    spdlog::warn("{}: {} record(s) were measured on another target than '{}'; they are not used",
                 path, other, t.key());
  return out;
}

// Each task's search has its own seed from its place in the plan, so that a task's guess does
// not depend on which other tasks the log covers.
int heuristicUntuned(const frontend::ModelPlan& plan, const target::Target& target,
                     std::map<std::string, std::vector<sched::Step>>* schedules) {
  int n = 0;
  for (const auto& task : plan.tasks) {
    if (schedules->count(task.key)) continue;
    if (auto steps = search::heuristicSchedule(search::SearchTask(task.dag, target))) {
      (*schedules)[task.key] = std::move(*steps);
      ++n;
    }
  }
  return n;
}

int guessUntuned(const frontend::ModelPlan& plan, const target::Target& target, uint64_t seed,
                 std::map<std::string, std::vector<sched::Step>>* schedules) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < plan.tasks.size(); ++i)
    if (!schedules->count(plan.tasks[i].key)) todo.push_back(i);
  if (todo.empty()) return 0;
  if (!costmodel::haveWorldModel() || costmodel::defaultWorldModelCheckpoint().empty()) {
    std::cerr << "note: " << todo.size() << " untuned tasks get the naive default schedule ("
              << (costmodel::haveWorldModel() ? "no world-model checkpoint found"
                                              : "this wmtune is built without libtorch")
              << ")\n";
    return 0;
  }
  costmodel::CostModelOptions co;
  co.name = "wm";
  co.seed = seed;
  auto model = costmodel::makeCostModel(co, target);
  search::EvolutionOptions eo;
  eo.population = 512;
  eo.generations = 2;
  int n = 0;
  for (size_t i : todo) {
    const auto& task = plan.tasks[i];
    search::SearchTask t(task.dag, target);
    if (auto steps = search::guessSchedule(t, *model, eo, seed * 1000003 + i)) {
      (*schedules)[task.key] = std::move(*steps);
      ++n;
    }
  }
  return n;
}

} // namespace wm::cli
