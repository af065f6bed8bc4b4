// `wmtune tune -w SPEC... --trials N --log FILE`: auto-schedules the workloads on this CPU and
// appends every measurement to the tuning log (resuming from it if it exists). Prints a line
// per round and a summary table; Ctrl-C stops after the measurement in flight (the log is
// complete up to there) and prints the summary.
#include "commands.h"
#include "option_flags.h"

#include <wm/codegen/codegen.h>
#include <wm/costmodel/factory.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/runtime/measure.h>
#include <wm/search/tuner.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/strings.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

namespace wm::cli {

namespace {

std::atomic<bool> gStop{false};
void onSigint(int) {
  gStop = true;
}

struct TuneCli {
  std::vector<std::string> specs;
  std::string model;
  std::string log = "tune.jsonl";
  std::string json;
  std::vector<std::string> onnx;
  search::TuneOptions opts;
  runtime::MeasureOptions measure;
  target::TargetOptions target;
  costmodel::CostModelOptions costModel;
  std::vector<std::string> warmStart;
  bool simulatedCosts = false;
};

std::string ms(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(4) << s * 1e3;
  return os.str();
}

void printSummary(const search::TuneSummary& s) {
  std::cout << "\n"
            << std::left << std::setw(18) << "task" << std::setw(44) << "workload" << std::right
            << std::setw(8) << "weight" << std::setw(12) << "best ms" << std::setw(10) << "GFLOP/s"
            << std::setw(8) << "trials" << std::setw(8) << "errors"
            << "\n";
  for (auto& t : s.tasks) {
    std::string w = t.workload.size() > 42 ? t.workload.substr(0, 39) + "..." : t.workload;
    double g = t.best > 0 ? t.flops / t.best * 1e-9 : 0;
    std::cout << std::left << std::setw(18) << t.key << std::setw(44) << w << std::right
              << std::setw(8) << t.weight << std::setw(12) << (t.best > 0 ? ms(t.best) : "-")
              << std::setw(10) << std::fixed << std::setprecision(1) << g << std::setw(8)
              << t.trials << std::setw(8) << t.errors << "\n";
  }
  std::cout << std::fixed << std::setprecision(1) << "wall " << s.wallSeconds << " s (search "
            << s.searchSeconds << " s, build " << s.buildSeconds << " s, run " << s.runSeconds
            << " s)" << (s.interrupted ? ", interrupted" : "") << "\n";
}

} // namespace

Command addTuneCommand(CLI::App& app) {
  auto* sub =
      app.add_subcommand("tune", "Auto-schedule workloads on this CPU, logging every measurement");
  auto o = std::make_shared<TuneCli>();
  sub->add_option("model", o->model, "ONNX model: tune its fused tasks");
  sub->add_option("-w,--workload", o->specs, "Workload spec op:key=value,... (repeatable)");
  addOptionFlags(*sub, o->target, target::targetOptionTable());
  addOptionFlags(*sub, o->opts, search::tuneOptionTable());
  addOptionFlags(*sub, o->opts.evolution, search::evolutionOptionTable());
  addOptionFlags(*sub, o->costModel, costmodel::costModelOptionTable());
  addOptionFlags(*sub, o->costModel.wm, costmodel::worldModelOptionTable());
  addOptionFlags(*sub, o->costModel.ansor, costmodel::ansorModelOptionTable());
  addOptionFlags(
      *sub, o->measure, runtime::measureOptionTable(),
      {"min_repeat_ms", "slow_run_s", "build_timeout_s", "run_timeout_s", "flush_cache"});
  sub->add_option("--warm-start", o->warmStart,
                  "Logs of other tasks the cost model learns from before tuning (repeatable)");
  sub->add_option("--log", o->log, "Tuning log (JSON lines; resumed if it exists)")
      ->capture_default_str();
  sub->add_option("--json", o->json, "Also write the summary as JSON to this file");
  sub->add_option("--onnx", o->onnx,
                  "ONNX model whose tasks the --warm-start logs may name (repeatable; the tuned "
                  "model is always allowed)");
  sub->add_flag("--simulated-costs", o->simulatedCosts,
                "Test hook: costs are a hash of the schedule, not measurements (determinism tests)")
      ->group(""); // hidden
  return [o]() {
    if (o->model.empty() && o->specs.empty())
      WM_USER_ERROR() << "tune: give an ONNX model or at least one -w workload";
    if (!o->json.empty()) checkWritable(o->json, "--json");
    std::vector<search::TaskSource> sources;
    if (!o->model.empty()) {
      std::string path = std::filesystem::absolute(o->model).string();
      auto plan = frontend::planModel(frontend::buildProgram(frontend::loadOnnx(o->model)));
      for (auto& mt : plan.tasks)
        sources.push_back({frontend::onnxTaskSpec(path, mt.key), mt.dag, double(mt.weight)});
    }
    for (auto& spec : o->specs) {
      Workload w = parseWorkload(spec);
      sources.push_back({w.canonical, w.dag, 1.0});
    }
    // (simulated costs run no kernel: a GPU target needs no device then)
    target::Target target =
        o->simulatedCosts ? codegen::resolveTarget(o->target) : runnableTarget(o->target);
    auto tasks = search::makeTuneTasks(sources, target);
    search::TuningLog log(o->log, search::TuningLog::Mode::Append);
    auto measurer = o->simulatedCosts ? runtime::makeSimulatedMeasurer()
                                      : runtime::makeWorkerMeasurer(o->measure, target);
    o->costModel.seed = o->opts.seed;
    auto model = costmodel::makeCostModel(o->costModel, target);
    std::vector<std::string> models = o->onnx;
    if (!o->model.empty()) models.push_back(o->model);
    auto warm = search::readLoggedTasks(o->warmStart, frontend::logWorkloadResolver(models));
    if (!warm.empty()) {
      auto recs = search::measuredRecords(warm);
      std::cout << "warm start: " << recs.size() << " records of " << warm.size() << " tasks\n";
      model->update(recs);
    }
    gStop = false;
    auto old = std::signal(SIGINT, onSigint);
    auto summary = search::tune(tasks, o->opts, *measurer, *model, log, o->costModel.name, &gStop,
                                [&](const search::TuneSummary& s, int ti, int round) {
                                  const auto& t = s.tasks[ti];
                                  int done = 0;
                                  for (auto& x : s.tasks) done += x.trials;
                                  std::cout
                                      << "round " << std::setw(3) << round << "  task " << t.key
                                      << "  trials " << done << "/" << o->opts.trials << "  best "
                                      << (t.best > 0 ? ms(t.best) + " ms" : std::string("-"))
                                      << "  " << std::fixed << std::setprecision(1)
                                      << (t.best > 0 ? t.flops / t.best * 1e-9 : 0) << " GFLOP/s"
                                      << std::endl;
                                });
    std::signal(SIGINT, old);
    printSummary(summary);
    if (!o->json.empty()) {
      nlohmann::json tj = nlohmann::json::array();
      for (auto& t : summary.tasks)
        tj.push_back({{"key", t.key},
                      {"workload", t.workload},
                      {"weight", t.weight},
                      {"best_latency_s", t.best},
                      {"gflops", t.best > 0 ? t.flops / t.best * 1e-9 : 0},
                      {"trials", t.trials},
                      {"errors", t.errors}});
      nlohmann::json j = {{"tasks", tj},
                          {"wall_s", summary.wallSeconds},
                          {"search_s", summary.searchSeconds},
                          {"build_s", summary.buildSeconds},
                          {"run_s", summary.runSeconds},
                          {"interrupted", summary.interrupted},
                          {"log", o->log},
                          {"seed", o->opts.seed},
                          {"target", target.key()},
                          {"cost_model", o->costModel.name}};
      writeFileAtomically(o->json, j.dump(2) + "\n");
    }
    return summary.interrupted ? 130 : 0;
  };
}

} // namespace wm::cli
