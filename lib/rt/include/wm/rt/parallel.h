// The thread pool behind wm_parallel_for (abi.h), as seen from C++: how many threads parallel
// regions use, whether they are pinned to cores, and how long idle workers spin before they
// sleep. A region costs microseconds, not a scheduler tick: workers spin on the next region for
// a while after each one (WM_SPIN_US, default 2000 µs), and iterations are split statically, so
// every thread gets its share (bench_parallel measures both against OpenMP).
#pragma once

namespace wm::rt {

/// Threads used by parallel loops (default: all hardware threads). Takes effect at the next
/// parallel region.
void setNumThreads(int n);
int numThreads();
/// on: pins the calling thread to the first CPU the process may use and worker k to the
/// (k+1)-th (threads beyond the allowed CPUs are not pinned); off: lets them run on every
/// allowed CPU again.
void setPinning(bool on);
bool pinning();
/// How long an idle worker spins on the next region before it sleeps (0: sleep at once).
void setSpinMicros(int us);

} // namespace wm::rt
