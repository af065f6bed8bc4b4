// Timing (see timing.h).
#include <wm/runtime/timing.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace wm::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double wallClockBatch(const std::function<void()>& call, int number) {
  auto t0 = Clock::now();
  for (int i = 0; i < number; ++i) call();
  return std::chrono::duration<double>(Clock::now() - t0).count() / number;
}

double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

} // namespace

double iqrOf(std::vector<double> v) {
  if (v.size() < 2) return 0;
  std::sort(v.begin(), v.end());
  return quantile(v, 0.75) - quantile(v, 0.25);
}

Timing timeCalls(const std::function<void()>& call, const MeasureOptions& o,
                 double firstCallSeconds, const std::function<void()>& flush,
                 const BatchClock& clock) {
  auto timeBatch = [&clock](const std::function<void()>& c, int number) {
    return clock ? clock(c, number) : wallClockBatch(c, number);
  };
  Timing t;
  bool flushing = o.flushCache && flush;
  double sampleS = std::max(0.0, o.minRepeatMs) * 1e-3;
  for (int i = 0; i < o.warmup; ++i) call();
  // Calibrate `number`: double a batch until it lasts a quarter of a sample.
  double perCall = firstCallSeconds;
  if (!flushing) {
    int k = 1;
    while (true) {
      double s = timeBatch(call, k);
      perCall = s;
      if (s * k >= sampleS / 4 || k >= (1 << 20)) break;
      k *= 2;
    }
    t.number = static_cast<int>(
        std::clamp(std::ceil(sampleS / std::max(perCall, 1e-9)), 1.0, double(1 << 24)));
    // Warm-up until stable: two consecutive batches within 5% (at most four batches; a call
    // longer than a sample is warm after the calls above).
    double prev = perCall >= sampleS ? 0 : timeBatch(call, t.number);
    for (int b = 0; b < 3 && perCall < sampleS; ++b) {
      double cur = timeBatch(call, t.number);
      bool stable = std::abs(cur - prev) <= 0.05 * std::min(cur, prev);
      prev = cur;
      if (stable) break;
    }
  }
  auto sampleSet = [&] {
    std::vector<double> s;
    for (int r = 0; r < std::max(1, o.repeat); ++r) {
      if (flushing) flush();
      s.push_back(timeBatch(call, t.number));
    }
    return s;
  };
  double bestSpread = INFINITY;
  for (int attempt = 0; attempt <= std::max(0, o.retries); ++attempt) {
    std::vector<double> s = sampleSet();
    double med = medianOf(s), iqr = iqrOf(s);
    double spread = med > 0 ? iqr / med : 0;
    if (spread < bestSpread) {
      bestSpread = spread;
      t.samples = std::move(s);
      t.median = med;
      t.iqr = iqr;
    }
    if (spread <= o.maxSpread) break;
    // Taking the samples again costs as much as taking them: not beyond a second in all.
    double setSeconds = t.median * t.number * std::max(1, o.repeat);
    if (setSeconds * (attempt + 2) > 1.0) break;
    if (attempt < o.retries) ++t.retimes;
  }
  return t;
}

} // namespace wm::runtime
