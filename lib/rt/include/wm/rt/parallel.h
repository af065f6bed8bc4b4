// The thread pool behind wm_parallel_for (abi.h), as seen from C++: how many threads parallel
// regions use.
#pragma once

namespace wm::rt {

/// Threads used by parallel loops (default: all hardware threads). Takes effect at the next
/// parallel region.
void setNumThreads(int n);
int numThreads();

} // namespace wm::rt
