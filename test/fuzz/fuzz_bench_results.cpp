// Fuzz target: a bench output's results.jsonl, read as `wmtune bench --report OUT` reads it and
// rendered into the whole report (Markdown, CSV, JSON, SVG) in a scratch folder.
#include "fuzz_common.h"

#include <wm/bench/bench.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/wm_fuzz_bench_XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) wm::fuzz::finding("mkdtemp failed");
    return std::string(d);
  }();
  {
    std::ofstream out(dir + "/results.jsonl", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  wm::fuzz::guarded([&] {
    auto records = wm::bench::readResults(dir + "/results.jsonl");
    if (records.empty()) return;
    wm::bench::writeReport(dir, records);
  });
  return 0;
}
