// Limits on sizes that come from input (specs, models, schedules, .npy files): every product of
// dimensions is computed with checked arithmetic (int_math.h) and compared with these before
// anything is allocated, so an absurd size is a user error naming the input, not a wrapped
// count, a bad_alloc or a crash.
#pragma once

#include <cstdint>
#include <string>

namespace wm {

/// Elements one tensor may have (2^40: far beyond memory, well below overflow of byte counts).
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// Iterations one loop nest (output elements times reduction extents) may run.
inline constexpr int64_t kMaxIterations = int64_t(1) << 62;

/// Bytes of physical memory of this machine (what one allocation may take at most).
int64_t physicalMemoryBytes();

/// Limits this process's address space (RLIMIT_AS) to what it maps now plus extraBytes (never
/// above the hard limit): for processes that run or read untrusted things (measurement workers,
/// checkpoint readers), so that what they allocate fails there instead of taking the machine.
void limitAddressSpace(int64_t extraBytes);

/// UserError "<what>: needs N bytes, more than this machine's M bytes of memory" when bytes
/// exceed physical memory (or is negative: an overflowed count).
void checkAllocation(int64_t bytes, const std::string& what);

} // namespace wm
