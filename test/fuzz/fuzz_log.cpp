// Fuzz target: tuning-log lines, parsed as every reader does, then ranked (bestRecords) and
// each distinct record's schedule replayed on its workload when that is a small built-in one
// (the first 16: a fuzzed input repeats lines, and replaying copies finds nothing new).
#include "fuzz_common.h"

#include <wm/frontend/workload.h>
#include <wm/schedule/steps.h>
#include <wm/search/tuning_log.h>
#include <wm/target/target.h>

#include <set>
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
    std::set<std::string> seen;
    for (auto& r : recs) {
      if (r.workload.rfind("onnx:", 0) == 0) continue; // logs never open models (see tune)
      if (seen.size() >= 16 ||
          !seen.insert(r.workload + '\n' + wm::sched::stepsToJson(r.steps)).second)
        continue;
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
