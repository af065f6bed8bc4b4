// Fuzz target: a schedule file (JSON steps) applied to one of a few small workloads (chosen by
// the first byte), replayed, lowered and, when small, interpreted: the result must equal the
// reference interpreter's (a wrong answer is a finding).
#include "../support/random_schedule.h"
#include "fuzz_common.h"

#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/lower/loop_interpreter.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const char* kWorkloads[] = {
      "gemm:M=16,N=16,K=16",
      "conv2d:N=1,C=4,H=8,W=8,K=8,R=3,S=3,pad=1",
      "softmax:M=4,N=32",
      "depthwise_conv2d:N=1,C=4,H=8,W=8,R=3,S=3,pad=1",
      "max_pool2d:N=1,C=4,H=8,W=8,R=2,S=2,stride=2",
      "relu:shape=4x16",
  };
  const std::string spec = kWorkloads[data[0] % (sizeof kWorkloads / sizeof kWorkloads[0])];
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  wm::fuzz::guarded([&] {
    std::vector<wm::sched::Step> steps;
    std::string err;
    if (!wm::sched::stepsFromJson(text, &steps, &err)) return;
    wm::Workload w = wm::parseWorkload(spec);
    auto r = wm::sched::replay(w.dag, steps);
    if (!r.error.empty()) return;
    auto f = wm::lower::lower(r.state);
    if (wm::testing::loopWork(f.body) > wm::fuzz::kMaxInterpretWork) return;
    auto inputs = wm::ir::randomInputs(w.dag, 1);
    auto got = wm::lower::runLowered(f, inputs);
    auto expect = wm::ir::evaluateOutputs(w.dag, inputs);
    for (size_t o = 0; o < got.size(); ++o) {
      double e = wm::ir::maxRelativeError(got[o], expect[o]);
      if (!(e <= 1e-4))
        wm::fuzz::finding("wrong answer (max relative error " + std::to_string(e) + ") for " +
                          spec + " with " + wm::sched::stepsToJson(steps));
    }
  });
  return 0;
}
