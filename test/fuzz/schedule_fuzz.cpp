// The schedule property, run for a count or a time budget: random operators of the library
// (two shapes each), random legal step sequences, lowered and interpreted against the
// reference. Prints the count; on a failure prints the workload and the schedule (JSON, usable
// with `wmtune compile --schedule`) and exits 1.
//
//   wm_schedule_fuzz [--seconds S] [--count N] [--seed X]
#include "../support/random_schedule.h"

#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/lower/loop_interpreter.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/support/strings.h>

#include <chrono>
#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  double seconds = 10;
  int64_t count = -1;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::cerr << "wm_schedule_fuzz: " << flag << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::atof(next("--seconds"));
    else if (!std::strcmp(argv[i], "--count"))
      count = std::atoll(next("--count"));
    else if (!std::strcmp(argv[i], "--seed"))
      seed = std::strtoull(next("--seed"), nullptr, 10);
    else {
      std::cerr << "wm_schedule_fuzz: unknown argument '" << argv[i] << "'\n";
      return 2;
    }
  }
  auto specs = wm::testing::smallWorkloads();
  wm::Rng rng(seed);
  auto t0 = std::chrono::steady_clock::now();
  int64_t done = 0, skipped = 0;
  while (true) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (count >= 0 ? done >= count : elapsed >= seconds) break;
    const std::string& spec = specs[rng.uniformInt(0, static_cast<int64_t>(specs.size()) - 1)];
    auto w = wm::parseWorkload(spec);
    auto inputs = wm::ir::randomInputs(w.dag, rng.next());
    auto steps = wm::testing::randomSchedule(w.dag, rng, 20);
    std::string what;
    try {
      auto r = wm::sched::replay(w.dag, steps);
      if (!r.error.empty())
        what = "replay failed at step " + std::to_string(r.failedStep) + ": " + r.error;
      else {
        auto f = wm::lower::lower(r.state);
        if (wm::testing::loopWork(f.body) > 2e5) {
          ++skipped;
          continue;
        }
        auto got = wm::lower::runLowered(f, inputs);
        auto expect = wm::ir::evaluateOutputs(w.dag, inputs);
        for (size_t o = 0; o < got.size(); ++o) {
          double err = wm::ir::maxRelativeError(got[o], expect[o]);
          if (!(err <= 1e-4))
            what = "max relative error " + std::to_string(err) + "\n" + wm::lower::toString(f);
        }
      }
    } catch (const std::exception& e) {
      what = std::string("exception: ") + e.what();
    }
    if (!what.empty()) {
      std::cerr << "FAILED after " << done << " schedules\nworkload " << spec << "\nschedule "
                << wm::sched::stepsToJson(steps) << "\n"
                << what << "\n";
      return 1;
    }
    ++done;
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "wm_schedule_fuzz: " << done << " random schedules checked in " << elapsed
            << " s, seed " << seed << " (" << skipped << " skipped as too large to interpret)\n"
            << done << " passed, 0 failed\n";
  return 0;
}
