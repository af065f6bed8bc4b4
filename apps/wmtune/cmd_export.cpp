// `wmtune export -w SPEC [-w SPEC ...] [--log LOG] -o DIR [--name NAME] [--static]`: the
// workloads' best kernels as a C library (libNAME.so, NAME.h, manifest.json; docs/export.md);
// `wmtune export model.onnx --log LOG -o DIR [--weights embedded|external]`: the whole model
// behind the wm_model_* C API.
#include "commands.h"
#include "option_flags.h"

#include <wm/codegen/codegen.h>
#include <wm/export/export.h>
#include <wm/frontend/graph.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/support/error.h>

#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>
#include <map>

namespace wm::cli {

namespace {

struct ExportCli {
  std::vector<std::string> specs;
  std::string model;
  std::string weights = "embedded";
  std::string untuned = "heuristic";
  uint64_t seed = 0;
  exporter::ExportOptions options;
  target::TargetOptions target;
};

} // namespace

Command addExportCommand(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "export", "Write tuned kernels as a C library (header, .so, .a, manifest) to a directory");
  auto o = std::make_shared<ExportCli>();
  sub->add_option("-w,--workload", o->specs, "Workload spec op:key=value,... (repeatable)");
  sub->add_option("model", o->model, "ONNX model to export whole (instead of -w)");
  sub->add_option(
      "--log", o->options.log,
      "Tuning log: each kernel uses its best valid record (default schedules otherwise)");
  sub->add_option("-o,--output", o->options.dir, "Output directory")->required();
  sub->add_option("--name", o->options.name,
                  "Library name: libNAME.so, NAME.h, the prefix of every symbol (a C identifier)")
      ->capture_default_str();
  sub->add_flag("--static", o->options.staticLib, "Also write the static archive libNAME.a");
  sub->add_flag("--force", o->options.force, "Export into a directory that is not empty");
  sub->add_option("--weights", o->weights,
                  "A model's weights: embedded in the library, or external in NAME.weights")
      ->check(CLI::IsMember({"embedded", "external"}))
      ->capture_default_str();
  sub->add_option("--untuned", o->untuned,
                  "A model's tasks without a record, as wmtune run: heuristic (fixed rules), "
                  "guess (the world model's pick) or naive (the default schedule)")
      ->check(CLI::IsMember({"guess", "heuristic", "naive"}))
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of --untuned guess (as wmtune run's)")
      ->capture_default_str();
  sub->add_flag("--require-tuned", o->options.requireTuned,
                "A workload without a valid record in the log is an error, not a warning");
  addOptionFlags(*sub, o->target, target::targetOptionTable(),
                 {"target", "mcpu", "mattr", "threads"});
  return [o]() {
    o->options.version = WM_VERSION;
    o->options.externalWeights = o->weights == "external";
    if (!o->model.empty() && !o->specs.empty())
      WM_USER_ERROR() << "export: give a model or -w SPEC, not both";
    if (o->model.empty() && o->options.externalWeights)
      WM_USER_ERROR() << "--weights external: only a model has weights";
    if (o->target.target == "cuda")
      WM_USER_ERROR() << "export --target cuda: GPU libraries (PTX inside) join when wmtune runs "
                         "kernels on GPUs; this build exports CPU libraries";
    target::Target target = codegen::resolveTarget(o->target);
    if (!o->model.empty()) {
      if (o->untuned != "naive" && !o->options.requireTuned) {
        auto prog = frontend::buildProgram(frontend::loadOnnx(o->model));
        auto plan = frontend::planModel(prog);
        std::map<std::string, std::vector<sched::Step>> have;
        if (!o->options.log.empty()) have = bestSchedules(o->options.log, target);
        auto all = have;
        o->options.untunedKind = o->untuned;
        if (o->untuned == "guess")
          guessUntuned(plan, target, o->seed, &all);
        else
          heuristicUntuned(plan, target, &all);
        for (auto& [key, steps] : all)
          if (!have.count(key)) o->options.untuned[key] = steps;
      }
      auto m = exporter::exportModel(o->model, target, o->options);
      int tuned = 0;
      for (const auto& k : m.kernels) tuned += k.tuned;
      std::cout << "exported " << o->model << " to " << o->options.dir << " as lib"
                << o->options.name << ".so (" << o->options.name << ".h, manifest.json"
                << (o->options.externalWeights ? ", " + o->options.name + ".weights" : "")
                << "): " << m.groups << " fused groups, " << m.kernels.size() << " kernels ("
                << tuned << " tuned from the log), " << m.weightsBytes / 1024 << " KiB of weights "
                << (o->options.externalWeights ? "beside it" : "embedded") << ", "
                << m.arenaBytes / 1024 << " KiB of buffers per handle\n";
      return 0;
    }
    std::vector<Workload> workloads;
    for (const auto& s : o->specs) workloads.push_back(parseWorkload(s));
    auto kernels = exporter::exportKernels(workloads, target, o->options);
    std::cout << "exported " << kernels.size() << " kernel(s) to " << o->options.dir << " as lib"
              << o->options.name << ".so (" << o->options.name << ".h, manifest.json)\n";
    for (const auto& k : kernels) {
      std::cout << "  " << k.symbol << "  " << k.spec << "  ";
      if (k.tuned)
        std::cout << "tuned, " << std::setprecision(4) << k.seconds * 1e3 << " ms\n";
      else
        std::cout << "default schedule\n";
    }
    return 0;
  };
}

} // namespace wm::cli
