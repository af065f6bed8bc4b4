// Aligned allocation of kernel temporaries (see abi.h, memory.h).
#include <wm/rt/abi.h>
#include <wm/rt/memory.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {
std::atomic<wm::rt::OutOfMemoryHandler> gHandler{nullptr};
}

namespace wm::rt {
void setOutOfMemoryHandler(OutOfMemoryHandler h) {
  gHandler = h;
}
} // namespace wm::rt

extern "C" {
void* wm_alloc(int64_t bytes) {
  constexpr int64_t a = wm::rt::kBufferAlignment;
  size_t size = static_cast<size_t>(bytes > 0 ? (bytes + a - 1) / a * a : a);
  void* p = std::aligned_alloc(static_cast<size_t>(a), size);
  if (!p) {
    if (auto h = gHandler.load()) h(bytes);
    std::fprintf(stderr, "wmtune: out of memory: a kernel's temporary buffer of %lld bytes\n",
                 static_cast<long long>(bytes));
    std::_Exit(2);
  }
  return p;
}
void wm_free(void* p) {
  std::free(p);
}
}
