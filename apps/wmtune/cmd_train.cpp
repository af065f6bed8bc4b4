// `wmtune train LOG... -o wm.pt`: pre-trains the world model from tuning logs.
// `wmtune eval-model --model wm.pt|ansor|random [--train LOG...] LOG...`: ranking metrics of a
// cost model on the measured records of held-out tasks (pairwise accuracy, top-1, top-5).
#include "commands.h"
#include "option_flags.h"

#include <wm/codegen/codegen.h>
#include <wm/costmodel/factory.h>
#include <wm/costmodel/metrics.h>
#include <wm/costmodel/world_model.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/schedule/steps.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>

namespace wm::cli {

namespace {

const char* kOnnxHelp =
    "ONNX model whose tasks the logs may name (repeatable; a log cannot make wmtune open any "
    "other file)";

struct TrainCli {
  std::vector<std::string> logs, onnx;
  std::string out, init = "none";
  int steps = 2000;
  costmodel::WorldModelOptions wm;
  uint64_t seed = 0;
};

struct EvalCli {
  std::vector<std::string> logs, train, onnx;
  std::string model;
  int trainSteps = 0;
  uint64_t seed = 0;
  std::string json;
  costmodel::WorldModelOptions wm;
};

} // namespace

Command addTrainCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("train", "Pre-train the world model from tuning logs");
  auto o = std::make_shared<TrainCli>();
  sub->add_option("logs", o->logs, "Tuning logs")->required();
  sub->add_option("-o,--output", o->out, "Checkpoint to write")->required();
  sub->add_option("--onnx", o->onnx, kOnnxHelp);
  sub->add_option("--steps", o->steps, "Adam steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--init", o->init, "Checkpoint to continue from ('none': fresh weights)")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed")->capture_default_str();
  addOptionFlags(*sub, o->wm, costmodel::worldModelOptionTable());
  return [o]() {
#ifndef WM_HAVE_TORCH
    WM_USER_ERROR() << "train needs libtorch (build with WM_WITH_TORCH=ON)";
#else
    checkWritable(o->out, "-o");
    auto tasks = search::readLoggedTasks(o->logs, frontend::logWorkloadResolver(o->onnx));
    if (tasks.empty()) WM_USER_ERROR() << "train: the logs hold no usable records";
    o->wm.seed = o->seed;
    o->wm.init = costmodel::resolveWorldModelInit(o->init);
    costmodel::WorldModel model(o->wm, costmodel::HardwareFeatures::of(codegen::resolveTarget({})));
    auto recs = search::measuredRecords(tasks);
    model.addSamples(recs);
    std::cout << "train: " << model.numSamples() << " samples of " << model.numTasks()
              << " tasks from " << o->logs.size() << " log(s)\n";
    auto t0 = std::chrono::steady_clock::now();
    int chunk = std::max(1, o->steps / 10);
    for (int done = 0; done < o->steps;) {
      int n = std::min(chunk, o->steps - done);
      double loss = model.train(n);
      done += n;
      std::cout << "  step " << std::setw(6) << done << "  loss " << std::fixed
                << std::setprecision(4) << loss << std::endl;
    }
    // training-set ranking quality (held-out quality: eval-model)
    std::vector<costmodel::TaskEval> evals;
    for (auto& t : tasks) {
      costmodel::TaskEval e;
      std::vector<std::vector<sched::Step>> steps;
      for (auto& r : t.records)
        if (r.ok()) {
          e.costs.push_back(r.median());
          steps.push_back(r.steps);
        }
      e.scores = model.score(t.dag, steps);
      evals.push_back(std::move(e));
    }
    auto m = costmodel::rankingMetrics(evals);
    model.save(o->out);
    std::cout << "train: " << std::setprecision(1)
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
              << " s; on the training data pairwise accuracy " << std::setprecision(3) << m.pairwise
              << ", top-1 " << m.top1 << ", top-5 " << m.top5 << "; wrote " << o->out << " ("
              << std::filesystem::file_size(o->out) / 1024 << " KiB)\n";
    return 0;
#endif
  };
}

Command addEvalModelCommand(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "eval-model", "Ranking metrics of a cost model on the records of held-out tasks");
  auto o = std::make_shared<EvalCli>();
  sub->add_option("logs", o->logs, "Tuning logs of the held-out tasks")->required();
  sub->add_option("--model", o->model, "A world-model checkpoint, 'ansor' or 'random'")->required();
  sub->add_option("--train", o->train,
                  "Logs the model learns from first (ansor: its training data; wm: fine-tuning)");
  sub->add_option("--train-steps", o->trainSteps, "wm: fine-tuning steps on --train")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed")->capture_default_str();
  sub->add_option("--json", o->json, "Also write the metrics as JSON to this file");
  sub->add_option("--onnx", o->onnx, kOnnxHelp);
  addOptionFlags(*sub, o->wm, costmodel::worldModelOptionTable());
  return [o]() {
    if (!o->json.empty()) checkWritable(o->json, "--json");
    auto resolve = frontend::logWorkloadResolver(o->onnx);
    auto evalTasks = search::readLoggedTasks(o->logs, resolve);
    auto trainTasks = search::readLoggedTasks(o->train, resolve);
    if (evalTasks.empty()) WM_USER_ERROR() << "eval-model: the logs hold no usable records";
    std::set<std::string> trainKeys;
    for (auto& t : trainTasks) trainKeys.insert(t.key);
    int overlap = 0;
    for (auto& t : evalTasks) overlap += trainKeys.count(t.key) > 0;
    if (overlap)
      spdlog::warn("{} evaluated task(s) are also in the training logs (not held out)", overlap);
    target::Target target = codegen::resolveTarget({});
    costmodel::CostModelOptions co;
    co.seed = o->seed;
    co.wm = o->wm;
    if (o->model == "ansor" || o->model == "random") {
      co.name = o->model;
    } else {
      if (!std::filesystem::exists(o->model))
        WM_USER_ERROR() << "--model " << o->model << ": no such file";
      co.name = "wm";
      co.init = o->model;
    }
    auto model = costmodel::makeCostModel(co, target);
    if (o->model == "ansor") {
      if (!trainTasks.empty())
        model->update(search::measuredRecords(trainTasks));
      else
        spdlog::warn("ansor without --train has no data: its scores are random");
    }
#ifdef WM_HAVE_TORCH
    if (co.name == "wm" && !trainTasks.empty() && o->trainSteps > 0) {
      auto* wm = dynamic_cast<costmodel::WorldModel*>(model.get());
      WM_CHECK(wm) << "the factory's wm is not a WorldModel";
      wm->addSamples(search::measuredRecords(trainTasks));
      wm->train(o->trainSteps);
    }
#endif
    std::vector<costmodel::TaskEval> evals;
    double predictSeconds = 0;
    int predicted = 0;
    for (auto& t : evalTasks) {
      costmodel::TaskEval e;
      std::vector<sched::State> states;
      for (auto& r : t.records) {
        if (!r.ok()) continue;
        auto rr = sched::replay(t.dag, r.steps);
        if (!rr.error.empty()) continue;
        e.costs.push_back(r.median());
        states.push_back(std::move(rr.state));
      }
      auto t0 = std::chrono::steady_clock::now();
      e.scores = model->predict(t.key, states);
      predictSeconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      predicted += static_cast<int>(states.size());
      evals.push_back(std::move(e));
    }
    auto m = costmodel::rankingMetrics(evals);
    std::cout << "eval-model " << o->model << ": " << m.tasks << " tasks, " << m.samples
              << " valid records, " << m.pairs << " pairs\n"
              << "  pairwise accuracy " << std::fixed << std::setprecision(4) << m.pairwise << "\n"
              << "  top-1 score       " << m.top1 << "\n"
              << "  top-5 score       " << m.top5 << "\n"
              << "  per-task top-1    " << m.top1Task << "  top-5 " << m.top5Task << "\n"
              << "  scoring           " << std::setprecision(0)
              << (predictSeconds > 0 ? predicted / predictSeconds : 0) << " candidates/s\n";
    if (!o->json.empty())
      writeFileAtomically(o->json, nlohmann::json{{"model", o->model},
                                                  {"tasks", m.tasks},
                                                  {"samples", m.samples},
                                                  {"pairs", m.pairs},
                                                  {"pairwise", m.pairwise},
                                                  {"top1", m.top1},
                                                  {"top5", m.top5},
                                                  {"top1_task", m.top1Task},
                                                  {"top5_task", m.top5Task}}
                                           .dump(2) +
                                       "\n");
    return 0;
  };
}

} // namespace wm::cli
