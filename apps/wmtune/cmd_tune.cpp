// `wmtune tune -w SPEC... --trials N --log FILE`: auto-schedules the workloads on this CPU and
// appends every measurement to the tuning log (resuming from it if it exists). Prints a line
// per round and a summary table; Ctrl-C stops after the measurement in flight (the log is
// complete up to there) and prints the summary.
#include "commands.h"
#include "option_flags.h"

#include <wm/codegen/codegen.h>
#include <wm/costmodel/factory.h>
#include <wm/distributed/cluster.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/runtime/measure.h>
#include <wm/search/tuner.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/strings.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
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
  std::string distributed;                 ///< "" or "mpi"
  std::string distributedMode = "measure"; ///< or "task"
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

void writeSummaryJson(const std::string& path, const search::TuneSummary& summary, const TuneCli& o,
                      const target::Target& target) {
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
                      {"log", o.log},
                      {"seed", o.opts.seed},
                      {"target", target.key()},
                      {"cost_model", o.costModel.name}};
  writeFileAtomically(path, j.dump(2) + "\n");
}

/// Task mode: each task's figures from the merged log. A task's records may come from any
/// rank's machine; its best is taken among the records of the target of its latest record,
/// preferring re-measured figures as bestRecords does.
search::TuneSummary summaryFromLog(const std::vector<search::TuneTask>& tasks,
                                   const search::TuningLog& log) {
  search::TuneSummary s;
  for (auto& t : tasks) {
    search::TaskSummary ts{t.task.key, t.workload, t.task.weight, 0, t.task.dag.flops(), 0, 0};
    std::string target;
    for (auto& r : log.records())
      if (r.task == t.task.key) target = r.target;
    std::map<std::string, const search::TuningRecord*> latest; // state -> latest figure
    for (auto& r : log.records()) {
      if (r.task != t.task.key) continue;
      if (!r.remeasure) {
        ++ts.trials;
        if (!r.ok()) ++ts.errors;
      }
      if (r.target != target) continue;
      auto& slot = latest[r.stepsKey()];
      if (!slot || r.remeasure) slot = r.ok() ? &r : nullptr;
    }
    double any = 0, again = 0;
    for (auto& [key, r] : latest) {
      if (!r) continue;
      if (any == 0 || r->median() < any) any = r->median();
      if (r->remeasure && (again == 0 || r->median() < again)) again = r->median();
    }
    ts.best = again > 0 ? again : any;
    s.tasks.push_back(ts);
  }
  return s;
}

/// The tune command after its flags were checked; mpi: the MPI world of a distributed run.
int runTune(TuneCli& cli, distributed::Mpi* mpi) {
  TuneCli* o = &cli;
  // Rank 0 waits for every worker's hello first; from then on an error on rank 0 stops the
  // workers (the coordinator's destructor).
  std::unique_ptr<distributed::Coordinator> coordinator;
  if (mpi && mpi->rank() == 0) coordinator = std::make_unique<distributed::Coordinator>(*mpi);
  bool worker = mpi && mpi->rank() != 0;
  if (!o->json.empty() && !worker) checkWritable(o->json, "--json");
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
  auto localMeasurer = [&] {
    return o->simulatedCosts ? runtime::makeSimulatedMeasurer()
                             : runtime::makeWorkerMeasurer(o->measure, target);
  };
  o->costModel.seed = o->opts.seed;
  std::vector<std::string> models = o->onnx;
  if (!o->model.empty()) models.push_back(o->model);
  auto warm = search::readLoggedTasks(o->warmStart, frontend::logWorkloadResolver(models));
  auto newModel = [&](bool quiet) {
    auto m = costmodel::makeCostModel(o->costModel, target);
    if (!warm.empty()) {
      auto recs = search::measuredRecords(warm);
      if (!quiet)
        std::cout << "warm start: " << recs.size() << " records of " << warm.size() << " tasks\n";
      m->update(recs);
    }
    return m;
  };

  if (worker) { // ranks 1..N-1: measure, or tune whole tasks, for rank 0
    auto measurer = localMeasurer();
    distributed::serve(*mpi, target.key(), *measurer,
                       [&](const distributed::TaskJob& job, search::TuningLog& jobLog) {
                         WM_CHECK(job.task >= 0 && job.task < static_cast<int>(tasks.size()) &&
                                  tasks[static_cast<size_t>(job.task)].task.key == job.key)
                             << "rank " << mpi->rank() << " derived other tasks than rank 0";
                         std::vector<search::TuneTask> one{tasks[static_cast<size_t>(job.task)]};
                         search::TuneOptions opts = o->opts;
                         opts.trials = job.trials;
                         auto model = newModel(true);
                         return search::tune(one, opts, *measurer, *model, jobLog,
                                             o->costModel.name);
                       });
    return 0;
  }

  search::TuningLog log(o->log, search::TuningLog::Mode::Append);
  std::unique_ptr<runtime::Measurer> measurer;
  if (coordinator) {
    std::cout << "distributed (" << o->distributedMode << " mode): rank 0 on " << mpi->host()
              << ", " << coordinator->workers().size() << " workers\n";
    for (auto& w : coordinator->workers())
      if (o->distributedMode == "measure" && w.target != target.key())
        WM_USER_ERROR() << "--distributed-mode measure needs identical machines, but rank "
                        << w.rank << " (" << w.host << ") is " << w.target << " and rank 0 is "
                        << target.key() << "; use --distributed-mode task";
    if (o->distributedMode == "measure") measurer = coordinator->measurer();
  } else {
    measurer = localMeasurer();
  }
  if (coordinator && o->distributedMode == "task") {
    // Each task its share of the trials (records already in the log count), tuned whole on
    // the first free rank.
    int nt = static_cast<int>(tasks.size());
    std::vector<distributed::TaskJob> jobs;
    for (int i = 0; i < nt; ++i) {
      distributed::TaskJob job;
      job.task = i;
      job.key = tasks[static_cast<size_t>(i)].task.key;
      job.trials = o->opts.trials / nt + (i < o->opts.trials % nt ? 1 : 0);
      for (auto& r : log.records())
        if (r.task == job.key) job.records.push_back(r);
      if (job.trials > 0) jobs.push_back(std::move(job));
    }
    auto t0 = std::chrono::steady_clock::now();
    double searchS = 0, buildS = 0, runS = 0;
    coordinator->runJobs(jobs, log, [&](const distributed::JobReport& rep) {
      searchS += rep.searchSeconds;
      buildS += rep.buildSeconds;
      runS += rep.runSeconds;
      std::cout << "task " << tasks[static_cast<size_t>(rep.task)].task.key << " done on rank "
                << rep.rank << " (" << rep.host << ") in " << std::fixed << std::setprecision(1)
                << rep.wallSeconds << " s" << std::endl;
    });
    auto summary = summaryFromLog(tasks, log);
    summary.searchSeconds = searchS;
    summary.buildSeconds = buildS;
    summary.runSeconds = runS;
    summary.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printSummary(summary);
    if (!o->json.empty()) writeSummaryJson(o->json, summary, *o, target);
    return 0;
  }
  auto model = newModel(false);
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
                                    << (t.best > 0 ? ms(t.best) + " ms" : std::string("-")) << "  "
                                    << std::fixed << std::setprecision(1)
                                    << (t.best > 0 ? t.flops / t.best * 1e-9 : 0) << " GFLOP/s"
                                    << std::endl;
                              });
  std::signal(SIGINT, old);
  printSummary(summary);
  if (!o->json.empty()) writeSummaryJson(o->json, summary, *o, target);
  return summary.interrupted ? 130 : 0;
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
  addOptionFlags(*sub, o->measure, runtime::measureOptionTable(),
                 {"min_repeat_ms", "slow_run_s", "build_timeout_s", "run_timeout_s", "flush_cache",
                  "pin_threads"});
  sub->add_option("--warm-start", o->warmStart,
                  "Logs of other tasks the cost model learns from before tuning (repeatable)");
  sub->add_option("--log", o->log, "Tuning log (JSON lines; resumed if it exists)")
      ->capture_default_str();
  sub->add_option("--json", o->json, "Also write the summary as JSON to this file");
  sub->add_option("--onnx", o->onnx,
                  "ONNX model whose tasks the --warm-start logs may name (repeatable; the tuned "
                  "model is always allowed)");
  sub->add_option("--distributed", o->distributed,
                  "Spread the tuning over the ranks of an MPI job: mpirun -np N wmtune tune ... "
                  "--distributed mpi (docs/distributed.md)")
      ->check(CLI::IsMember({"mpi"}));
  sub->add_option("--distributed-mode", o->distributedMode,
                  "measure: ranks 1..N-1 measure rank 0's candidates (identical machines); task: "
                  "each rank tunes whole tasks on its own machine")
      ->check(CLI::IsMember({"measure", "task"}))
      ->capture_default_str();
  sub->add_flag("--simulated-costs", o->simulatedCosts,
                "Test hook: costs are a hash of the schedule, not measurements (determinism tests)")
      ->group(""); // hidden
  return [o]() {
    if (o->model.empty() && o->specs.empty())
      WM_USER_ERROR() << "tune: give an ONNX model or at least one -w workload";
    if (o->distributed.empty() && o->distributedMode != "measure")
      WM_USER_ERROR() << "--distributed-mode needs --distributed mpi";
    if (o->distributed.empty()) return runTune(*o, nullptr);
    // A distributed run: MPI first (exit 2 without an MPI build or launcher); an error on rank 0
    // after its coordinator stopped the workers is reported as usual, any other ends the job
    // (Mpi::fail).
    distributed::Mpi mpi;
    try {
      if (mpi.size() < 2)
        WM_USER_ERROR() << "--distributed mpi needs at least 2 ranks (rank 0 searches, the others "
                           "measure): mpirun -np N with N >= 2";
      return runTune(*o, &mpi);
    } catch (const std::exception& e) {
      mpi.fail(e.what());
      throw;
    }
  };
}

} // namespace wm::cli
