// Timing like the trusted tools (TVM's `number` × `repeat` with `min_repeat_ms`): a sample
// times a batch of `number` calls, with `number` chosen so that a sample lasts at least
// minRepeatMs (well above the clock's resolution and a scheduler tick); warm-up runs until two
// batches agree; `repeat` samples give the median and the spread (interquartile range); a
// timing whose spread exceeds maxSpread of the median is taken again (at most `retries` times)
// and the steadiest set is kept. Used by the measurement worker (ProgramRunner), `run --bench`
// and the graph executor's per-kernel profile, so every figure is timed the same way.
#pragma once

#include <wm/runtime/measure.h>

#include <functional>
#include <vector>

namespace wm::runtime {

struct Timing {
  std::vector<double> samples; ///< seconds per call, one per sample
  double median = 0, iqr = 0;  ///< seconds per call
  int number = 1;              ///< calls per sample
  int retimes = 0;             ///< how often the spread made it take the samples again
};

/// Interquartile range (linear interpolation between order statistics); 0 for < 2 values.
double iqrOf(std::vector<double> values);

/// Seconds per call of a batch of `number` calls of call(), by some clock (Device::clock).
using BatchClock = std::function<double(const std::function<void()>& call, int number)>;

/// Times call(). firstCallSeconds (> 0 when known) seeds the choice of `number`; flush, when
/// given and opts.flushCache is set, runs before every sample and makes `number` 1. clock, when
/// given, times each batch (a GPU's events); else the wall clock around the calls.
Timing timeCalls(const std::function<void()>& call, const MeasureOptions& opts,
                 double firstCallSeconds = 0, const std::function<void()>& flush = {},
                 const BatchClock& clock = {});

} // namespace wm::runtime
