// Fuzz target: the bytes of a .npy file (`run --input`), parsed into an array.
#include "fuzz_common.h"

#include <wm/runtime/npy.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  wm::fuzz::guarded([&] { wm::runtime::parseNpy(bytes, "input.npy"); });
  return 0;
}
