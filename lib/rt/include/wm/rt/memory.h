// What happens when a kernel's temporary cannot be allocated (wm_alloc, abi.h). A kernel cannot
// fail part-way and go on, so the process ends; the host decides how: by default a message on
// stderr and exit code 2 (the machine lacks the memory the model or schedule needs: the user's
// limit, not a bug); the measurement worker answers "out of memory" for its candidate first.
#pragma once

#include <cstdint>

namespace wm::rt {

using OutOfMemoryHandler = void (*)(int64_t bytes);

/// Called with the size wm_alloc could not get; must not return (nullptr: the default).
void setOutOfMemoryHandler(OutOfMemoryHandler h);

} // namespace wm::rt
