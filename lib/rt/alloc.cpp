// Aligned allocation of kernel temporaries (see abi.h).
#include <wm/rt/abi.h>

#include <cstdio>
#include <cstdlib>

extern "C" {
void* wm_alloc(int64_t bytes) {
  constexpr int64_t a = wm::rt::kBufferAlignment;
  size_t size = static_cast<size_t>(bytes > 0 ? (bytes + a - 1) / a * a : a);
  void* p = std::aligned_alloc(static_cast<size_t>(a), size);
  if (!p) {
    std::fprintf(stderr, "wmtune kernel: out of memory allocating %lld bytes\n",
                 static_cast<long long>(bytes));
    std::abort();
  }
  return p;
}
void wm_free(void* p) {
  std::free(p);
}
}
