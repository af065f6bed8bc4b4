// Fuzz target: the bytes of a world-model checkpoint (`--init`, `eval-model --model`), loaded
// (metadata, layout, sizes, weights) and, when it loads, used to score one small schedule.
// Built only with libtorch (WM_WITH_TORCH).
#include "fuzz_common.h"

#include <wm/costmodel/world_model.h>
#include <wm/frontend/workload.h>
#include <wm/schedule/steps.h>

#include <unistd.h>

#include <fstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/wm_fuzz_checkpoint_" + std::to_string(getpid()) + ".pt";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  wm::fuzz::guarded([&] {
    wm::costmodel::WorldModelOptions o;
    o.init = path;
    wm::costmodel::WorldModel model(o, wm::costmodel::HardwareFeatures{});
    static const wm::Workload w = wm::parseWorkload("gemm:M=16,N=16,K=16");
    model.score(w.dag, {{}, {wm::sched::SplitStep{2, 0, 16, {4}, true}}});
  });
  return 0;
}
