// The kernel ABI: what generated code, the JIT and exported kernel libraries agree on. This
// library (wm_rt) is below code generation: code generators name these symbols and constants,
// and every program that runs generated CPU code links it.
//
//   void NAME(void** args)  one pointer per buffer, the inputs then the outputs (the order of
//                           lower::LoweredFunc), each kBufferAlignment-byte aligned. f32
//                           buffers hold float, f16 _Float16, i32/i64 ints, bool one byte.
//
// A parallel loop is outlined into fn(i, closure) and run by one wm_parallel_for call (one call
// per parallel region); temporary buffers larger than kMaxStackBufferBytes come from wm_alloc.
#pragma once

#include <cstdint>

namespace wm::rt {

/// Alignment of every kernel argument and temporary buffer.
constexpr int64_t kBufferAlignment = 64;
/// Temporaries up to this size are stack allocations of the kernel; larger ones wm_alloc.
constexpr int64_t kMaxStackBufferBytes = 64 * 1024;

/// The C symbols generated code calls, by name.
constexpr const char* kParallelForSymbol = "wm_parallel_for";
constexpr const char* kAllocSymbol = "wm_alloc";
constexpr const char* kFreeSymbol = "wm_free";

} // namespace wm::rt

extern "C" {
/// Runs fn(i, closure) for every i in [0, n) on the pool; returns when all are done.
/// A call from inside a parallel region runs serially on the calling thread.
void wm_parallel_for(int64_t n, void (*fn)(int64_t, void*), void* closure);
/// Threads of parallel regions (n <= 0: all cores): wm::rt::setNumThreads for C callers.
void wm_set_num_threads(int n);
/// The parallel regions the calling thread starts use n threads (0: the pool's count,
/// wm::rt::setNumThreads); an exported model's handles set their own count this way.
void wm_set_caller_threads(int n);
/// kBufferAlignment-aligned memory for buffers too large for the stack (never null: aborts
/// when out of memory, as a kernel has no way to report it).
void* wm_alloc(int64_t bytes);
void wm_free(void* p);
}
