// Fuzz target: a workload spec (`-w op:key=value,...`), parsed into its DAG and, when the shapes
// are tiny, evaluated by the reference interpreter.
#include "fuzz_common.h"

#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string spec(reinterpret_cast<const char*>(data), size);
  wm::fuzz::guarded([&] {
    wm::Workload w = wm::parseWorkload(spec);
    if (static_cast<double>(w.dag.flops()) + 1 > wm::fuzz::kMaxInterpretWork) return;
    int64_t elements = 0;
    for (auto& t : w.dag.ops()) elements += t->numElements();
    if (static_cast<double>(elements) > wm::fuzz::kMaxInterpretWork) return;
    auto inputs = wm::ir::randomInputs(w.dag, 1);
    wm::ir::evaluateOutputs(w.dag, inputs);
  });
  return 0;
}
