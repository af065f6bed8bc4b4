// Floor division and modulo of integers (the remainder takes the divisor's sign), the
// semantics of the IR's integer / and %.
#pragma once

#include <cstdint>

namespace wm {

inline int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t floorMod(int64_t a, int64_t b) {
  return a - floorDiv(a, b) * b;
}

/// a * b, false when it overflows int64.
inline bool checkedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

} // namespace wm
