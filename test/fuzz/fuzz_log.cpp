// Fuzz target: tuning-log lines, parsed as every reader does, then ranked (bestRecords) and
// each record's schedule replayed on its workload when that is a small built-in one.
#include "fuzz_common.h"

#include <wm/frontend/workload.h>
#include <wm/schedule/steps.h>
#include <wm/search/tuning_log.h>
#include <wm/target/target.h>

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  wm::fuzz::guarded([&] {
    std::istringstream lines(text);
    std::string line;
    std::vector<wm::search::TuningRecord> recs;
    while (std::getline(lines, line)) {
      wm::search::TuningRecord r;
      std::string err;
      if (wm::search::TuningLog::fromLine(line, &r, &err)) recs.push_back(std::move(r));
    }
    static const wm::target::Target target = wm::target::makeCpuTarget({}, {});
    auto best = wm::search::bestRecords(recs, target);
    for (auto& r : recs) {
      if (r.workload.rfind("onnx:", 0) == 0) continue; // logs never open models (see tune)
      try {
        wm::Workload w = wm::parseWorkload(r.workload);
        if (static_cast<double>(w.dag.flops()) > 1e7) continue;
        wm::sched::replay(w.dag, r.steps);
      } catch (const wm::UserError&) {
      }
    }
    (void)best;
  });
  return 0;
}
