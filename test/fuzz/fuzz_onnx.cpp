// Fuzz target: the bytes of an ONNX model, loaded, converted (constant folding, shape
// propagation), planned into fused tasks and, when every task is tiny, each task's DAG
// evaluated by the reference interpreter.
#include "fuzz_common.h"

#include <wm/frontend/graph.h>
#include <wm/frontend/model.h>
#include <wm/ir/interpreter.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  wm::fuzz::guarded([&] {
    auto graph = wm::frontend::loadOnnxFromBytes(bytes, "model.onnx");
    auto prog = wm::frontend::buildProgram(graph);
    auto plan = wm::frontend::planModel(prog);
    wm::frontend::indexRanges(prog);
    for (auto& t : plan.tasks) {
      if (static_cast<double>(t.dag.flops()) > wm::fuzz::kMaxInterpretWork) continue;
      int64_t elements = 0;
      for (auto& op : t.dag.ops()) elements += op->numElements();
      if (static_cast<double>(elements) > wm::fuzz::kMaxInterpretWork) continue;
      wm::ir::evaluateOutputs(t.dag, wm::ir::randomInputs(t.dag, 1));
    }
  });
  return 0;
}
