// The one random-number source of wmtune. Every random choice is drawn from an Rng seeded
// (directly or through fork()) from the user's --seed, so runs are reproducible. The
// distributions are written here rather than taken from <random>, whose distributions differ
// between standard libraries.
#pragma once

#include <cstdint>
#include <random>

namespace wm {

class Rng {
public:
  explicit Rng(uint64_t seed = 0) : gen_(seed) {}

  uint64_t next() { return gen_(); }
  /// Uniform integer in [lo, hi] (inclusive).
  int64_t uniformInt(int64_t lo, int64_t hi) {
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<int64_t>(next());
    // Rejection sampling avoids modulo bias.
    uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t r;
    do r = next();
    while (r >= limit);
    return lo + static_cast<int64_t>(r % span);
  }
  /// Uniform double in [0, 1).
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  bool bernoulli(double p) { return uniform01() < p; }
  /// An independent stream derived from this one (for sub-components).
  Rng fork() { return Rng(next() ^ 0xd1b54a32d192ed03ULL); }

private:
  std::mt19937_64 gen_; // the engine's sequence is fixed by the C++ standard
};

} // namespace wm
