// `wm_fma_peak [--threads N]`: this machine's FMA peak in GFLOP/s (best of 3 rounds of every
// thread running the register-only FMA loop of fma_peak.h for ~0.1 s), for benchmark scripts
// that must report the peak measured in the same run as their figures (benchmarks/README.md).
#include <wm/bench/fma_peak.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
      threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: wm_fma_peak [--threads N]\n");
      return 2;
    }
  }
  const int64_t iters = 2'000'000;
  double best = 0;
  volatile double sink = 0;
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&] { sink = sink + wm::bench::fmaLoop(iters); });
    for (auto& t : ts) t.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, wm::bench::fmaFlopsPerIter() * iters * threads / s * 1e-9);
  }
  std::printf("fma_peak_gflops %.1f threads %d\n", best, threads);
  return 0;
}
