// `wmtune workloads [NAME]`: lists the built-in operators with their parameters.
#include "commands.h"

#include <wm/frontend/workload.h>
#include <wm/support/error.h>

#include <CLI/CLI.hpp>

#include <iostream>

namespace wm::cli {

namespace {

void printDef(const WorkloadDef& d, bool detailed) {
  std::cout << d.name << " — " << d.summary << "\n";
  for (auto& p : d.params) {
    std::cout << "    " << p.name;
    if (p.defaultValue.empty())
      std::cout << " (required";
    else
      std::cout << " (default " << p.defaultValue;
    std::cout << ", " << paramKindName(p.kind) << ")  " << p.help << "\n";
  }
  std::cout << "    e.g. " << d.example << "\n";
  if (detailed) {
    Workload w = parseWorkload(d.example);
    std::cout << "\n" << w.dag.toString();
  }
}

} // namespace

Command addWorkloadsCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("workloads", "List the built-in operators and their parameters");
  auto name = std::make_shared<std::string>();
  sub->add_option("name", *name, "Show one operator, with the DAG of its example");
  return [name]() {
    if (!name->empty()) {
      const WorkloadDef* d = findWorkload(*name);
      if (!d) WM_USER_ERROR() << "workloads: unknown op '" << *name << "'";
      printDef(*d, true);
      return 0;
    }
    std::cout << "Workload specs are written op:key=value,... (shapes as 1x64x56x56).\n\n";
    for (auto& d : workloadDefs()) printDef(d, false);
    return 0;
  };
}

} // namespace wm::cli
