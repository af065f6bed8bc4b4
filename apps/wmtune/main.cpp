// wmtune: command-line entry point. Parses the global flags, sets up logging, runs one
// subcommand, and turns errors into exit codes: 0 success, 2 user error (bad flag, spec,
// file), 3 internal error (a bug in wmtune).
#include "commands.h"

#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/log.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  CLI::App app{"wmtune: an auto-scheduler for tensor programs ranked by a compiler world model"};
  app.set_version_flag("--version", std::string("wmtune ") + WM_VERSION);
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More log output (repeat for trace)");
  app.add_flag("-q,--quiet", quiet, "Only errors on stderr");
  app.require_subcommand(0, 1);

  std::vector<std::pair<CLI::App*, wm::cli::Command>> commands;
  auto add = [&](wm::cli::Command (*f)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    wm::cli::Command cmd = f(app);
    commands.emplace_back(app.get_subcommands({}).at(before), std::move(cmd));
  };
  add(wm::cli::addWorkloadsCommand);
  add(wm::cli::addTasksCommand);
  add(wm::cli::addCompileCommand);
  add(wm::cli::addTuneCommand);
  add(wm::cli::addRunCommand);
  add(wm::cli::addExportCommand);
  add(wm::cli::addTrainCommand);
  add(wm::cli::addEvalModelCommand);
  add(wm::cli::addBenchCommand);
  add(wm::cli::addMeasureCommand);
  add(wm::cli::addOptionsCommand);
  add(wm::cli::addWorkerCommand);

  // Unknown arguments are collected instead of failing early, so the message can name them
  // (CLI11 would otherwise report only the missing subcommand).
  app.allow_extras();
  try {
    app.parse(argc, argv);
    if (!app.remaining().empty()) {
      std::cerr << "wmtune: unknown argument '" << app.remaining().front() << "' (see --help)\n";
      return 2;
    }
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  wm::setupLogging(quiet ? -1 : verbosity);
  try {
    for (auto& [sub, cmd] : commands)
      if (sub->parsed()) {
        int rc = cmd();
        wm::checkStdout(); // output lost to a full disk or a closed pipe is an error
        return rc;
      }
    std::cerr << "wmtune: no subcommand given (see --help)\n";
    return 2;
  } catch (const wm::UserError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const wm::InternalError& e) {
    spdlog::critical("internal error: {}", e.what());
    return 3;
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {}", e.what());
    return 3;
  }
}
