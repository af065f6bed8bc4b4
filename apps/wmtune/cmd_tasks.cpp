// `wmtune tasks -w SPEC...`: prints each workload's DAG: ops, shapes, FLOPs, workload key.
#include "commands.h"

#include <wm/frontend/workload.h>
#include <wm/ir/printer.h>
#include <wm/support/strings.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>

namespace wm::cli {

namespace {

struct TasksOptions {
  std::vector<std::string> specs;
  bool json = false;
};

void printText(const Workload& w) {
  const auto& dag = w.dag;
  std::cout << "workload " << w.canonical << "\n";
  std::cout << "  key    " << dag.workloadKey() << "\n";
  std::cout << "  FLOPs  " << withThousands(dag.flops()) << "\n";
  std::cout << "  ops    " << dag.size() << "\n";
  std::cout << "    #  " << std::left << std::setw(22) << "op" << std::setw(24) << "kind"
            << std::setw(26) << "shape" << std::right << std::setw(16) << "FLOPs" << "\n";
  for (size_t i = 0; i < dag.size(); ++i) {
    const auto& op = dag.op(static_cast<int>(i));
    std::string kind = op.isPlaceholder() ? "placeholder" : op.tag;
    if (op.hasReduction()) kind += " (" + std::string(ir::reduceKindName(op.reduce)) + ")";
    std::cout << "    " << std::left << std::setw(3) << i << std::setw(22) << op.name
              << std::setw(24) << kind << std::setw(26) << ir::typeString(op.dtype, op.shape)
              << std::right << std::setw(16) << withThousands(dag.flops(static_cast<int>(i)))
              << "\n";
  }
  std::cout << "  DAG\n";
  for (auto& t : dag.ops()) std::cout << "    " << ir::toString(*t) << "\n";
  std::cout << "\n";
}

nlohmann::json toJson(const Workload& w) {
  const auto& dag = w.dag;
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < dag.size(); ++i) {
    const auto& op = dag.op(static_cast<int>(i));
    ops.push_back({{"name", op.name},
                   {"kind", op.isPlaceholder() ? "placeholder" : "compute"},
                   {"tag", op.tag},
                   {"dtype", ir::dtypeName(op.dtype)},
                   {"shape", op.shape},
                   {"reduce", ir::reduceKindName(op.reduce)},
                   {"flops", dag.flops(static_cast<int>(i))},
                   {"text", ir::toString(op)}});
  }
  return {{"spec", w.spec},     {"canonical", w.canonical}, {"key", dag.workloadKey()},
          {"flops", dag.flops()}, {"ops", ops}};
}

} // namespace

Command addTasksCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("tasks", "Print the tasks of workloads: DAG, shapes, FLOPs, key");
  auto opts = std::make_shared<TasksOptions>();
  sub->add_option("-w,--workload", opts->specs, "Workload spec op:key=value,... (repeatable)")
      ->required();
  sub->add_flag("--json", opts->json, "Print JSON instead of text");
  return [opts]() {
    std::vector<Workload> ws;
    for (auto& s : opts->specs) ws.push_back(parseWorkload(s)); // all errors before any output
    if (opts->json) {
      nlohmann::json out = nlohmann::json::array();
      for (auto& w : ws) out.push_back(toJson(w));
      std::cout << out.dump(2) << "\n";
    } else {
      for (auto& w : ws) printText(w);
    }
    return 0;
  };
}

} // namespace wm::cli
