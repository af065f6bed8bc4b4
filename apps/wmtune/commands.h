// The subcommands of the wmtune CLI. Each file cmd_*.cpp declares its options on the CLI11
// app (flags of options structs come from their option tables: option_flags.h) and returns the
// function that runs it after parsing. Library logic lives in the libraries, not here.
#pragma once

#include <wm/schedule/step_types.h>
#include <wm/target/target.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace CLI {
class App;
}
namespace wm::frontend {
struct ModelPlan;
}

namespace wm::cli {

/// Runs the subcommand; returns the process exit code. Throws UserError for bad input.
using Command = std::function<int()>;

/// Reads a schedule file (a JSON step list); UserError naming the file otherwise. An empty
/// path is the empty schedule.
std::vector<sched::Step> readScheduleFile(const std::string& path);

/// The target of a command that runs kernels: this CPU's, or for --target cuda the GPU's (a
/// UserError, exit 2, saying why when there is no usable device: no libcuda.so.1, no device,
/// driver too old).
target::Target runnableTarget(const target::TargetOptions& opts);

/// The best record per task key of the tuning log at `path`, for the target (records of other
/// targets are skipped with a warning).
std::map<std::string, std::vector<sched::Step>> bestSchedules(const std::string& path,
                                                              const target::Target& t);

/// --untuned guess: adds to `schedules` a schedule for each task of the plan it lacks, the
/// world model's pick of an evolutionary search without measurements (deterministic for the
/// seed). Returns how many tasks got one; 0, with the reason on stderr, when this build or
/// install has no world model to ask (the naive default schedules are used then).
/// --untuned heuristic: the same with search::heuristicSchedule (no model, no measurement).
int heuristicUntuned(const frontend::ModelPlan& plan, const target::Target& target,
                     std::map<std::string, std::vector<sched::Step>>* schedules);
int guessUntuned(const frontend::ModelPlan& plan, const target::Target& target, uint64_t seed,
                 std::map<std::string, std::vector<sched::Step>>* schedules);

Command addWorkloadsCommand(CLI::App& app);
Command addTasksCommand(CLI::App& app);
Command addCompileCommand(CLI::App& app);
Command addMeasureCommand(CLI::App& app);
Command addWorkerCommand(CLI::App& app);
Command addTuneCommand(CLI::App& app);
Command addRunCommand(CLI::App& app);
Command addTrainCommand(CLI::App& app);
Command addEvalModelCommand(CLI::App& app);
Command addOptionsCommand(CLI::App& app);
Command addBenchCommand(CLI::App& app);
Command addExportCommand(CLI::App& app);

} // namespace wm::cli
