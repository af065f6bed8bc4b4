// Parallel runtime micro-benchmark: wmtune's thread pool (wm_parallel_for, lib/rt) against
// OpenMP (libgomp, `#pragma omp parallel for schedule(static)`) on the same loop bodies, at 1
// and 2 threads: an empty region (the cost of a region), a memory-bound loop (a[i] = b[i]*s +
// c[i] over arrays larger than the caches) and a compute-bound loop (dependent FMA chains on
// data in L1). Each figure is the median of 7 samples of a batch of regions (timing.h's idea).
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/benchmarks/wm_bench_parallel
//
// Under `taskset -c 0` both threads share one core: the case of a scheduler that leaves two
// spinning threads on one core (see lib/rt/parallel.cpp). 2 threads must then cost about what
// 1 thread costs plus context switches, not a scheduler slice per region.
//
// With --probe it prints only the machine's FMA rate at 1 and 2 threads through the pool, as
// JSON, timed as `wmtune measure` times a kernel (5 samples of ~20 ms, the median): run in
// fresh processes beside fresh kernel measurements, it shows how far the machine itself moves
// (benchmarks/timing_cpu.py).
#include <wm/bench/fma_peak.h>
#include <wm/rt/abi.h>
#include <wm/rt/parallel.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Arrays {
  std::vector<float> a, b, c;
  int64_t chunk = 0;
};

void emptyBody(int64_t, void*) {}

void memoryBody(int64_t i, void* p) {
  auto* d = static_cast<Arrays*>(p);
  int64_t begin = i * d->chunk, end = begin + d->chunk;
  float* a = d->a.data();
  const float *b = d->b.data(), *c = d->c.data();
  for (int64_t k = begin; k < end; ++k) a[k] = b[k] * 1.5f + c[k];
}

void computeBody(int64_t i, void* p) {
  auto* d = static_cast<Arrays*>(p);
  float* a = d->a.data() + i * 256; // 1 KiB per chunk: stays in L1
  for (int rep = 0; rep < 512; ++rep)
    for (int k = 0; k < 256; ++k) a[k] = a[k] * 0.999f + 0.001f;
}

/// Median over 7 samples of seconds per call of f, each sample a batch of `inner` calls.
double timePerCall(const std::function<void()>& f, int inner) {
  f();
  std::vector<double> s;
  for (int r = 0; r < 7; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < inner; ++i) f();
    s.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / inner);
  }
  std::sort(s.begin(), s.end());
  return s[3];
}

void ompFor(int threads, int64_t n, void (*fn)(int64_t, void*), void* ctx) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) fn(i, ctx);
}

void fmaBody(int64_t, void* p) {
  auto* iters = static_cast<int64_t*>(p);
  volatile double keep = wm::bench::fmaLoop(*iters);
  (void)keep;
}

/// GFLOP/s of the FMA loop on `threads` threads through the pool (median of 5 ~20 ms samples).
double probeGflops(int threads) {
  wm::rt::setNumThreads(threads);
  int64_t iters = 1000;
  auto once = [&] {
    auto t0 = Clock::now();
    wm_parallel_for(threads, fmaBody, &iters);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  while (once() < 0.02) iters *= 2; // also the warm-up
  std::vector<double> s;
  for (int r = 0; r < 5; ++r) s.push_back(once());
  std::sort(s.begin(), s.end());
  return wm::bench::fmaFlopsPerIter() * double(iters) * threads / s[2] * 1e-9;
}

} // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--probe") == 0) {
    double g1 = probeGflops(1), g2 = probeGflops(2);
    std::printf("{\"gflops_1\": %.2f, \"gflops_2\": %.2f}\n", g1, g2);
    return 0;
  }
  Arrays d;
  const int64_t elems = int64_t(16) << 20; // 64 MiB per array
  d.a.assign(elems, 1.f);
  d.b.assign(elems, 2.f);
  d.c.assign(elems, 3.f);
  struct Case {
    const char* name;
    int64_t n;
    void (*fn)(int64_t, void*);
    int inner;
    double work; // bytes or flops per region, for the rate column
    const char* unit;
  };
  const int64_t memChunks = 256;
  d.chunk = elems / memChunks;
  std::vector<Case> cases{
      {"empty region", 2, emptyBody, 20000, 0, ""},
      {"memory-bound a=b*s+c, 3x64 MiB", memChunks, memoryBody, 3, double(elems) * 12, "GB/s"},
      {"compute-bound FMA chains", 512, computeBody, 5, 512.0 * 512 * 256 * 2, "GFLOP/s"},
      // a small kernel's region (a depthwise conv, a norm): 100-400 µs at 1 thread here
      {"short regions, 16 FMA chunks", 16, computeBody, 2000, 16.0 * 512 * 256 * 2, "GFLOP/s"}};
  std::printf("| loop | runtime | 1 thread | 2 threads | speed-up | rate (2 threads) |\n");
  std::printf("|---|---|---:|---:|---:|---:|\n");
  for (auto& c : cases) {
    for (int rtKind = 0; rtKind < 2; ++rtKind) {
      double t[3] = {0, 0, 0};
      for (int threads : {1, 2}) {
        // let the other runtime's idle threads stop spinning first
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (rtKind == 0) {
          wm::rt::setNumThreads(threads);
          t[threads] = timePerCall([&] { wm_parallel_for(c.n, c.fn, &d); }, c.inner);
        } else {
          t[threads] = timePerCall([&] { ompFor(threads, c.n, c.fn, &d); }, c.inner);
        }
      }
      auto fmt = [](double s) {
        static char buf[4][32];
        static int k = 0;
        char* b = buf[k++ % 4];
        if (s < 1e-3)
          std::snprintf(b, 32, "%.2f µs", s * 1e6);
        else
          std::snprintf(b, 32, "%.3f ms", s * 1e3);
        return b;
      };
      char rate[32] = "";
      if (c.work > 0) std::snprintf(rate, sizeof rate, "%.1f %s", c.work / t[2] * 1e-9, c.unit);
      std::printf("| %s | %s | %s | %s | %.2fx | %s |\n", c.name,
                  rtKind == 0 ? "wmtune" : "OpenMP (libgomp)", fmt(t[1]), fmt(t[2]), t[1] / t[2],
                  rate);
    }
  }
  return 0;
}
