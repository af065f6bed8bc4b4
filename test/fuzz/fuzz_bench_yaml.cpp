// Fuzz target: bench files (YAML), parsed and checked as `wmtune bench` does, then planned into
// cells and each cell's tune arguments made. Tune flags are checked by a small stand-in for the
// tune command's options (the app checks them with CLI11; that is CLI11's parser, not ours).
#include "fuzz_common.h"

#include <wm/bench/bench.h>
#include <wm/bench/config.h>

#include <set>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  wm::fuzz::guarded([&] {
    auto check = [](const std::string& flag, std::string* value) -> wm::bench::FlagProblem {
      static const std::set<std::string> withValue{"cost-model", "min-ms", "population"};
      if (flag == "flush") {
        if (!value->empty() && *value != "true") return {"a switch"};
        *value = "";
        return {};
      }
      if (!withValue.count(flag)) return {"unknown flag", true};
      if (value->empty()) return {"needs a value"};
      return {};
    };
    auto c = wm::bench::parseBenchConfig(text, "fuzz.yaml", check);
    for (auto& w : c.workloads) w.tasks = 3;
    auto cells = wm::bench::planCells(c);
    if (cells.size() > 100000) return; // a plan that large is a valid (if silly) answer
    for (auto& cell : cells) (void)wm::bench::tuneArgs(c, cell, "x.jsonl", "x.json");
    for (auto& tc : c.configs) (void)wm::bench::budgetsOf(c, tc);
  });
  return 0;
}
