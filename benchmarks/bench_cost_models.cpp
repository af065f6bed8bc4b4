// Scoring throughput of the cost models on the same candidate batch: the world model (prefix-
// shared latent rollouts, no lowering) against `ansor` (lowers every candidate and extracts
// its static features, then XGBoost) and `random`.
//
//   build/benchmarks/wm_bench_cost_models [--batch 2048] [--repeat 3] [--threads 2]
//
// For each workload: a batch of candidates like the evolutionary search's (random annotations
// of the task's sketches), the ansor model trained on 128 measured-like samples (so that it
// runs its trees, not its random fallback), then predict() timed on the whole batch.
#include <wm/codegen/codegen.h>
#include <wm/costmodel/cost_model.h>
#include <wm/costmodel/world_model.h>
#include <wm/frontend/workload.h>
#include <wm/search/annotate.h>
#include <wm/search/sketch.h>
#include <wm/support/rng.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <string>

using namespace wm;

int main(int argc, char** argv) {
  int batch = 2048, repeat = 3, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--batch")
      batch = std::atoi(argv[i + 1]);
    else if (a == "--repeat")
      repeat = std::atoi(argv[i + 1]);
    else if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
  }
  const char* specs[] = {"gemm:M=1024,N=1024,K=1024",
                         "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1",
                         "batch_matmul:B=12,M=128,N=128,K=64", "softmax:M=1536,N=128"};
  std::cout << std::left << std::setw(56) << "workload" << std::right << std::setw(8) << "batch"
            << std::setw(16) << "wm cand/s" << std::setw(16) << "ansor cand/s" << std::setw(16)
            << "random cand/s" << std::setw(10) << "wm/ansor"
            << "\n";
  target::Target target = codegen::resolveTarget({"llvm", "", "", threads});
  double logSum = 0;
  int n = 0;
  for (const char* spec : specs) {
    auto w = parseWorkload(spec);
    search::SearchTask task(w.dag, target);
    auto sketches = search::generateSketches(task);
    Rng rng(1);
    std::vector<sched::State> states;
    for (int i = 0; static_cast<int>(states.size()) < batch && i < 50 * batch; ++i)
      if (auto s = search::annotate(task, sketches[static_cast<size_t>(i) % sketches.size()], rng))
        states.push_back(*s);
    // training data for ansor: the first 128 candidates with made-up costs
    std::vector<costmodel::MeasuredRecord> recs;
    for (size_t i = 0; i < 128 && i < states.size(); ++i)
      recs.push_back({task.key, &w.dag, states[i].steps(),
                      1e-3 * (1.0 + static_cast<double>(rng.uniformInt(0, 100)))});
    costmodel::AnsorModelOptions ao;
    ao.minSamples = 64;
    auto ansor = costmodel::makeAnsorModel(ao);
    ansor->update(recs);
    costmodel::WorldModelOptions wo;
    wo.threads = threads;
    wo.init = costmodel::defaultWorldModelCheckpoint();
    costmodel::WorldModel wm(wo, costmodel::HardwareFeatures::of(target));
    auto rnd = costmodel::makeRandomModel(1);
    auto rate = [&](costmodel::CostModel& m) {
      double best = 1e30;
      for (int r = 0; r < repeat; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        auto s = m.predict(task.key, states);
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, dt);
      }
      return static_cast<double>(states.size()) / best;
    };
    double a = rate(*ansor), b = rate(wm), c = rate(*rnd);
    logSum += std::log(b / a);
    ++n;
    std::cout << std::left << std::setw(56) << spec << std::right << std::setw(8) << states.size()
              << std::fixed << std::setprecision(0) << std::setw(16) << b << std::setw(16) << a
              << std::setw(16) << c << std::setprecision(1) << std::setw(9) << b / a << "x\n";
  }
  std::cout << "geomean wm/ansor scoring throughput: " << std::fixed << std::setprecision(1)
            << std::exp(logSum / n) << "x\n";
  return 0;
}
