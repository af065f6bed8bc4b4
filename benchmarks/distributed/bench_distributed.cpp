// Distributed tuning by simulation (docs/distributed.md, "Scaling"): replays a real tuning log
// of a model through the tuner with N simulated measuring workers (distributed/simulate.h) and
// prints, per N, the virtual wall time, trials per second, the speed-up over one worker and
// the share of the time rank 0 spends searching while the workers wait.
//
// usage: wm_bench_distributed MODEL.onnx LOG.jsonl [--trials-per-task 64] [--workers 1,2,4,...]
//                             [--cost-model NAME] [--seed S] [--json OUT.json]
// The cost model and seed default to those of the log's first record, so that the replayed
// run proposes what the logged run measured (then nearly every cost and time is a logged one).
#include <wm/codegen/codegen.h>
#include <wm/costmodel/factory.h>
#include <wm/distributed/simulate.h>
#include <wm/frontend/graph.h>
#include <wm/frontend/model.h>
#include <wm/search/tuner.h>
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

using namespace wm;

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::cerr << "usage: wm_bench_distributed MODEL.onnx LOG.jsonl [--trials-per-task N] "
                 "[--workers 1,2,4] [--cost-model NAME] [--seed S] [--json OUT]\n";
    return 2;
  }
  std::string modelPath = argv[1], logPath = argv[2], jsonOut, costModel;
  int perTask = 64;
  long seed = -1;
  std::vector<int> workers = {1, 2, 4, 8, 16, 64};
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string f = argv[i], v = argv[i + 1];
    if (f == "--trials-per-task") {
      perTask = std::stoi(v);
    } else if (f == "--workers") {
      workers.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) workers.push_back(std::stoi(x));
    } else if (f == "--cost-model") {
      costModel = v;
    } else if (f == "--seed") {
      seed = std::stol(v);
    } else if (f == "--json") {
      jsonOut = v;
    } else {
      std::cerr << "unknown flag " << f << "\n";
      return 2;
    }
  }
  search::TuningLog replayLog(logPath, search::TuningLog::Mode::Read);
  auto records = replayLog.records();
  if (records.empty()) WM_USER_ERROR() << logPath << ": no records";
  if (costModel.empty()) costModel = records.front().model;
  if (seed < 0) seed = static_cast<long>(records.front().seed);

  target::Target target = codegen::resolveTarget({});
  std::string path = std::filesystem::absolute(modelPath).string();
  auto plan = frontend::planModel(frontend::buildProgram(frontend::loadOnnx(modelPath)));
  std::vector<search::TaskSource> sources;
  for (auto& mt : plan.tasks)
    sources.push_back({frontend::onnxTaskSpec(path, mt.key), mt.dag, double(mt.weight)});
  auto tasks = search::makeTuneTasks(sources, target);
  // The log's workloads name the model where it was then: match them by task key.
  std::map<std::string, std::string> specOf;
  for (auto& t : tasks) specOf[t.task.key] = t.workload;
  for (auto& r : records)
    if (specOf.count(r.task)) r.workload = specOf[r.task];

  distributed::SimulatedCluster cluster(records, workers);
  search::TuneOptions opts;
  opts.trials = perTask * static_cast<int>(tasks.size());
  opts.seed = static_cast<uint64_t>(seed);
  costmodel::CostModelOptions cm;
  cm.name = costModel;
  cm.seed = opts.seed;
  auto model = costmodel::makeCostModel(cm, target);
  search::TuningLog log({}, nullptr);
  auto summary = search::tune(tasks, opts, cluster, *model, log, costModel);

  std::printf("%s: %zu tasks x %d trials (%d rounds), cost model %s, seed %ld; %d of %d "
              "candidates replayed from %s\n",
              modelPath.c_str(), tasks.size(), perTask, cluster.timelines().at(0).rounds,
              costModel.c_str(), seed, cluster.replayed(), cluster.replayed() + cluster.madeUp(),
              logPath.c_str());
  std::printf("rank 0 search (real, this machine): %.1f s\n", summary.searchSeconds);
  std::printf("%8s %12s %10s %9s %12s %12s\n", "workers", "wall s", "trials/s", "speed-up",
              "search %", "worker use %");
  nlohmann::json rows = nlohmann::json::array();
  double one = 0;
  for (auto& t : cluster.timelines()) {
    if (one == 0) one = t.seconds;
    double use = t.busySeconds / (t.workers * t.seconds);
    std::printf("%8d %12.1f %10.2f %9.2f %12.1f %12.1f\n", t.workers, t.seconds,
                t.trials / t.seconds, one / t.seconds, 100 * t.searchSeconds / t.seconds,
                100 * use);
    rows.push_back({{"workers", t.workers},
                    {"seconds", t.seconds},
                    {"trials", t.trials},
                    {"trials_per_s", t.trials / t.seconds},
                    {"search_s", t.searchSeconds},
                    {"busy_s", t.busySeconds},
                    {"worker_use", use}});
  }
  if (!jsonOut.empty()) {
    nlohmann::json j = {{"model", std::filesystem::path(modelPath).filename().string()},
                        {"tasks", tasks.size()},
                        {"trials_per_task", perTask},
                        {"cost_model", costModel},
                        {"seed", seed},
                        {"replayed", cluster.replayed()},
                        {"made_up", cluster.madeUp()},
                        {"search_s", summary.searchSeconds},
                        {"rows", rows}};
    writeFileAtomically(jsonOut, j.dump(2) + "\n");
  }
  return 0;
} catch (const UserError& e) {
  std::cerr << "wm_bench_distributed: " << e.what() << "\n";
  return 2;
}
