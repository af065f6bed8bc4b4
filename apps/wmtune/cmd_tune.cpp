// `wmtune tune -w SPEC... --trials N --log FILE`: auto-schedules the workloads on this CPU and
// appends every measurement to the tuning log (resuming from it if it exists). Prints a line
// per round and a summary table; Ctrl-C stops after the measurement in flight (the log is
// complete up to there) and prints the summary.
#include "commands.h"

#include <wm/costmodel/cost_model.h>
#include <wm/costmodel/world_model.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/runtime/measure.h>
#include <wm/search/tuner.h>
#include <wm/support/error.h>
#include <wm/support/strings.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <iomanip>
#include <iostream>

namespace wm::cli {

namespace {

std::atomic<bool> gStop{false};
void onSigint(int) { gStop = true; }

struct TuneCli {
  std::vector<std::string> specs;
  std::string model;
  std::string target = "llvm";
  std::string costModel = "random";
  std::string log = "tune.jsonl";
  std::string json;
  search::TuneOptions opts;
  runtime::MeasureOptions measure;
  bool quiet = false;
  std::string init = "default";
  std::vector<std::string> warmStart;
  costmodel::WorldModelOptions wm;
};

std::string ms(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(4) << s * 1e3;
  return os.str();
}

void printSummary(const search::TuneSummary& s) {
  std::cout << "\n" << std::left << std::setw(18) << "task" << std::setw(44) << "workload" << std::right
            << std::setw(8) << "weight" << std::setw(12) << "best ms" << std::setw(10) << "GFLOP/s"
            << std::setw(8) << "trials" << std::setw(8) << "errors" << "\n";
  for (auto& t : s.tasks) {
    std::string w = t.workload.size() > 42 ? t.workload.substr(0, 39) + "..." : t.workload;
    double g = t.best > 0 ? t.flops / t.best * 1e-9 : 0;
    std::cout << std::left << std::setw(18) << t.key << std::setw(44) << w << std::right << std::setw(8)
              << t.weight << std::setw(12) << (t.best > 0 ? ms(t.best) : "-") << std::setw(10) << std::fixed
              << std::setprecision(1) << g << std::setw(8) << t.trials << std::setw(8) << t.errors << "\n";
  }
  std::cout << std::fixed << std::setprecision(1) << "wall " << s.wallSeconds << " s (search " << s.searchSeconds
            << " s, build " << s.buildSeconds << " s, run " << s.runSeconds << " s)"
            << (s.interrupted ? ", interrupted" : "") << "\n";
}

} // namespace

Command addTuneCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("tune", "Auto-schedule workloads on this CPU, logging every measurement");
  auto o = std::make_shared<TuneCli>();
  sub->add_option("model", o->model, "ONNX model: tune its fused tasks");
  sub->add_option("-w,--workload", o->specs, "Workload spec op:key=value,... (repeatable)");
  sub->add_option("--target", o->target, "Target")->check(CLI::IsMember({"llvm"}))->capture_default_str();
  sub->add_option("--trials", o->opts.trials, "Total measurements (the log's records of these tasks count)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_option("--per-round", o->opts.perRound, "Measurements per round (capped by trials / tasks)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_option("--cost-model", o->costModel, "Cost model: random, ansor (static features + XGBoost), wm (the world model)")
      ->check(CLI::IsMember({"random", "ansor", "wm"}))->capture_default_str();
  sub->add_option("--init", o->init, "wm: checkpoint to start from ('default': the shipped one; 'none': fresh weights)")
      ->capture_default_str();
  sub->add_option("--warm-start", o->warmStart, "Logs of other tasks the cost model learns from before tuning (repeatable)");
  addWorldModelOptions(*sub, o->wm);
  sub->add_option("--log", o->log, "Tuning log (JSON lines; resumed if it exists)")->capture_default_str();
  sub->add_option("--seed", o->opts.seed, "Seed of every random choice")->capture_default_str();
  sub->add_option("--strategy", o->opts.strategy, "Task scheduler")->check(CLI::IsMember({"gradient", "round-robin"}))->capture_default_str();
  sub->add_option("--population", o->opts.evolution.population, "Evolutionary search population")->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_option("--generations", o->opts.evolution.generations, "Evolutionary search generations")->check(CLI::NonNegativeNumber)->capture_default_str();
  sub->add_option("--mutation-prob", o->opts.evolution.mutationProb, "Mutation probability")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  sub->add_option("--eps-greedy", o->opts.evolution.epsGreedy, "Share of random picks per round")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  sub->add_option("--threads", o->measure.threads, "Kernel threads (0: all cores)")->capture_default_str();
  sub->add_option("--min-ms", o->measure.minRepeatMs, "Minimum timed milliseconds per candidate")->capture_default_str();
  sub->add_option("--slow-run", o->measure.slowRunS, "Seconds after which a candidate's first run is its only run")->capture_default_str();
  sub->add_option("--build-timeout", o->measure.buildTimeoutS, "Seconds")->capture_default_str();
  sub->add_option("--run-timeout", o->measure.runTimeoutS, "Seconds")->capture_default_str();
  sub->add_option("--json", o->json, "Also write the summary as JSON to this file");
  return [o]() {
    std::vector<search::TuneTask> tasks;
    std::map<std::string, size_t> seen;
    if (o->model.empty() && o->specs.empty()) WM_USER_ERROR() << "tune: give an ONNX model or at least one -w workload";
    if (!o->model.empty()) {
      std::string path = std::filesystem::absolute(o->model).string();
      auto prog = frontend::buildProgram(frontend::loadOnnx(o->model));
      auto plan = frontend::planModel(prog);
      for (auto& mt : plan.tasks) {
        search::SearchTask t(mt.dag, search::TargetKind::Cpu, search::HardwareParams::hostCpu());
        t.weight = mt.weight;
        seen[t.key] = tasks.size();
        tasks.push_back({frontend::onnxTaskSpec(path, mt.key), std::move(t)});
      }
    }
    for (auto& spec : o->specs) {
      Workload w = parseWorkload(spec);
      search::SearchTask t(w.dag, search::TargetKind::Cpu, search::HardwareParams::hostCpu());
      auto it = seen.find(t.key);
      if (it != seen.end()) { // identical workloads are one task with more weight
        tasks[it->second].task.weight += 1;
        continue;
      }
      seen[t.key] = tasks.size();
      tasks.push_back({w.canonical, std::move(t)});
    }
    search::TuningLog log(o->log);
    auto measurer = runtime::makeWorkerMeasurer(o->measure);
    std::unique_ptr<costmodel::CostModel> model;
    if (o->costModel == "wm") {
      o->wm.seed = o->opts.seed;
      o->wm.init = resolveInit(o->init);
#ifdef WM_HAVE_TORCH
      model = std::make_unique<costmodel::WorldModel>(o->wm, costmodel::HardwareFeatures::hostCpu(o->measure.threads));
#else
      WM_USER_ERROR() << "--cost-model wm needs libtorch (build with WM_WITH_TORCH=ON)";
#endif
    } else if (o->costModel == "ansor") {
      costmodel::AnsorModelOptions ao;
      ao.seed = o->opts.seed;
      model = costmodel::makeAnsorModel(ao);
    } else {
      model = costmodel::makeRandomModel(o->opts.seed);
    }
    std::vector<LoggedTask> warm = readLoggedTasks(o->warmStart);
    if (!warm.empty()) {
      auto recs = measuredRecords(warm);
      std::cout << "warm start: " << recs.size() << " records of " << warm.size() << " tasks\n";
      model->update(recs);
    }
    gStop = false;
    auto old = std::signal(SIGINT, onSigint);
    auto summary = search::tune(tasks, o->opts, *measurer, *model, log, o->costModel, &gStop,
                                [&](const search::TuneSummary& s, int ti, int round) {
                                  const auto& t = s.tasks[ti];
                                  int done = 0;
                                  for (auto& x : s.tasks) done += x.trials;
                                  std::cout << "round " << std::setw(3) << round << "  task " << t.key
                                            << "  trials " << done << "/" << o->opts.trials << "  best "
                                            << (t.best > 0 ? ms(t.best) + " ms" : std::string("-")) << "  "
                                            << std::fixed << std::setprecision(1)
                                            << (t.best > 0 ? t.flops / t.best * 1e-9 : 0) << " GFLOP/s"
                                            << std::endl;
                                });
    std::signal(SIGINT, old);
    printSummary(summary);
    if (!o->json.empty()) {
      nlohmann::json tj = nlohmann::json::array();
      for (auto& t : summary.tasks)
        tj.push_back({{"key", t.key}, {"workload", t.workload}, {"weight", t.weight}, {"best_latency_s", t.best},
                      {"gflops", t.best > 0 ? t.flops / t.best * 1e-9 : 0}, {"trials", t.trials}, {"errors", t.errors}});
      nlohmann::json j = {{"tasks", tj},
                          {"wall_s", summary.wallSeconds},
                          {"search_s", summary.searchSeconds},
                          {"build_s", summary.buildSeconds},
                          {"run_s", summary.runSeconds},
                          {"interrupted", summary.interrupted},
                          {"log", o->log},
                          {"seed", o->opts.seed},
                          {"cost_model", o->costModel}};
      std::ofstream out(o->json);
      if (!out) WM_USER_ERROR() << o->json << ": cannot write";
      out << j.dump(2) << "\n";
    }
    return summary.interrupted ? 130 : 0;
  };
}

} // namespace wm::cli
