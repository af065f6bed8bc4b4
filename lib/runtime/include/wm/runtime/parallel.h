// The small runtime that generated CPU kernels call: a thread pool for parallel loops and
// aligned allocation of large temporary buffers. Generated code calls the C symbols; one call
// of wm_parallel_for runs one parallel region.
#pragma once

#include <cstdint>

extern "C" {
/// Runs fn(i, closure) for every i in [0, n) on the pool; returns when all are done.
/// A call from inside a parallel region runs serially on the calling thread.
void wm_parallel_for(int64_t n, void (*fn)(int64_t, void*), void* closure);
/// 64-byte aligned memory for buffers too large for the stack.
void* wm_alloc(int64_t bytes);
void wm_free(void* p);
}

namespace wm::runtime {

/// Threads used by parallel loops (default: all hardware threads). Takes effect at the next
/// parallel region.
void setNumThreads(int n);
int numThreads();

} // namespace wm::runtime
