// The subcommands of the wmtune CLI. Each file cmd_*.cpp declares its options on the CLI11
// app and returns the function that runs it after parsing.
#pragma once

#include <wm/costmodel/cost_model.h>
#include <wm/ir/compute_dag.h>
#include <wm/search/tuning_log.h>
#include <wm/schedule/step_types.h>

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}
namespace wm::costmodel {
struct WorldModelOptions;
}

namespace wm::cli {

/// Runs the subcommand; returns the process exit code. Throws UserError for bad input.
using Command = std::function<int()>;

/// Reads a schedule file (a JSON step list); UserError naming the file otherwise. An empty
/// path is the empty schedule.
std::vector<sched::Step> readScheduleFile(const std::string& path);

/// The world model's hyper-parameters as flags (--wm-latent, --wm-hidden, ...).
void addWorldModelOptions(CLI::App& sub, costmodel::WorldModelOptions& o);
/// --init: "default" (the shipped checkpoint, or fresh weights when there is none), "none"
/// (fresh), or a path.
std::string resolveInit(const std::string& init);

/// The DAG a workload spec names: a built-in spec or an `onnx:PATH#KEY` model task.
ir::ComputeDAG dagOfWorkload(const std::string& spec);

/// The records of tuning logs grouped by task, with each task's DAG; a task whose workload
/// cannot be built (a model file that moved) is skipped with a warning.
struct LoggedTask {
  std::string key, workload;
  ir::ComputeDAG dag;
  std::vector<search::TuningRecord> records;
};
std::vector<LoggedTask> readLoggedTasks(const std::vector<std::string>& paths);
/// As cost-model training records (failed measurements have cost 0); DAGs point into `tasks`.
std::vector<costmodel::MeasuredRecord> measuredRecords(const std::vector<LoggedTask>& tasks);

Command addWorkloadsCommand(CLI::App& app);
Command addTasksCommand(CLI::App& app);
Command addCompileCommand(CLI::App& app);
Command addMeasureCommand(CLI::App& app);
Command addWorkerCommand(CLI::App& app);
Command addTuneCommand(CLI::App& app);
Command addRunCommand(CLI::App& app);
Command addTrainCommand(CLI::App& app);
Command addEvalModelCommand(CLI::App& app);

} // namespace wm::cli
