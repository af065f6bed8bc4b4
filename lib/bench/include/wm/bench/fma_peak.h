// The FMA peak loop shared by the benchmarks: independent FMA chains per thread, in registers
// (24 of AVX-512 when the CPU has it, else 12 of AVX2), so that its speed is the core's and
// nothing else's. Benchmarks measure it in the same run as what they report, because this
// machine's own speed moves (see docs/cpu-backend.md, "The machine's noise floor").
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace wm::bench {

__attribute__((target("avx512f"))) inline double fmaLoop512(int64_t iters) {
  __m512 a[24];
  for (int i = 0; i < 24; ++i) a[i] = _mm512_set1_ps(1.0f + i * 1e-4f);
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int64_t n = 0; n < iters; ++n) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) a[i] = _mm512_fmadd_ps(a[i], x, y);
  }
  float s = 0;
  for (int i = 0; i < 24; ++i) s += _mm512_reduce_add_ps(a[i]);
  return s;
}

// AVX2 has 16 vector registers: 24 chains (and x, y) would spill to the stack every iteration
// and lower the figure (on a Zen 3 it read 121-170 GFLOP/s where 12 chains read 180-195, in
// one run); 12 chains cover the FMA latency of two pipes and stay in registers.
__attribute__((target("avx2,fma"))) inline double fmaLoop256(int64_t iters) {
  __m256 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(1.0f + i * 1e-4f);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int64_t n = 0; n < iters; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], x, y);
  }
  alignas(32) float o[8];
  float s = 0;
  for (int i = 0; i < 12; ++i) {
    _mm256_store_ps(o, a[i]);
    for (float v : o) s += v;
  }
  return s;
}

inline bool hasAvx512() {
  return __builtin_cpu_supports("avx512f");
}

/// Runs `iters` iterations of the widest loop; returns a value to keep it alive.
inline double fmaLoop(int64_t iters) {
  return hasAvx512() ? fmaLoop512(iters) : fmaLoop256(iters);
}

/// Floating-point operations of one iteration of fmaLoop.
inline double fmaFlopsPerIter() {
  return hasAvx512() ? 2.0 * 24 * 16 : 2.0 * 12 * 8;
}

} // namespace wm::bench
