// A stable 64-bit hash: the same value on every run, platform and build, so that it can name
// workloads in tuning logs. Never hashes pointers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace wm {

class StableHasher {
public:
  StableHasher& add(uint64_t v) {
    // splitmix64-style mixing of each word into the state.
    uint64_t z = v + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    h_ ^= z ^ (z >> 31);
    return *this;
  }
  StableHasher& addInt(int64_t v) { return add(static_cast<uint64_t>(v)); }
  StableHasher& addDouble(double v) {
    if (v == 0.0) v = 0.0; // -0 and +0 hash alike
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
  }
  StableHasher& addString(std::string_view s) {
    add(s.size());
    for (unsigned char c : s) add(c);
    return *this;
  }
  uint64_t value() const { return h_; }

private:
  uint64_t h_ = 0x6a09e667f3bcc908ULL;
};

/// 16 lowercase hex digits.
std::string hashToHex(uint64_t h);

} // namespace wm
