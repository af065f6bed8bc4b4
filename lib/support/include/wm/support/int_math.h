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
/// a + b, false when it overflows int64.
inline bool checkedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

/// Sizes computed from input (attributes, spec parameters): a + b and a * b that record an
/// overflow instead of wrapping; check ok() once at the end of a computation.
class SizeMath {
public:
  int64_t add(int64_t a, int64_t b) {
    int64_t r = 0;
    ok_ &= checkedAdd(a, b, &r);
    return r;
  }
  int64_t sub(int64_t a, int64_t b) {
    int64_t r = 0;
    ok_ &= !__builtin_sub_overflow(a, b, &r);
    return r;
  }
  int64_t mul(int64_t a, int64_t b) {
    int64_t r = 0;
    ok_ &= checkedMul(a, b, &r);
    return r;
  }
  bool ok() const { return ok_; }

private:
  bool ok_ = true;
};

} // namespace wm
