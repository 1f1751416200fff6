// A random source that replays the same sequence for a seed on every platform, compiler and
// standard library: SplitMix64 (Steele, Lea and Flood, 2014) and a range reduction written
// out here. std::uniform_int_distribution is not used because its algorithm is the standard
// library's choice, so a seed printed by one build need not replay on another.
#pragma once

#include <cstdint>
#include <limits>

#include "base/assert.h"

namespace cairva::model {

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}

  // The next 64 random bits.
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [lo, hi]. Draws that fall in the last, incomplete run of `span` values of the
  // 64-bit range are drawn again, so every value is equally likely; the rest is a modulo.
  int64_t uniform(int64_t lo, int64_t hi) {
    CAIRVA_ASSERT(lo <= hi);
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    if (span == 0) return static_cast<int64_t>(next());  // the whole 64-bit range
    constexpr uint64_t max = std::numeric_limits<uint64_t>::max();
    const uint64_t incomplete = (max % span + 1) % span;  // 2^64 mod span
    uint64_t x = next();
    while (incomplete != 0 && x > max - incomplete) x = next();
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % span);
  }

 private:
  uint64_t state_;
};

}  // namespace cairva::model
