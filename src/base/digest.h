// SHA-256 of a string, and a 128-bit digest (its first half) for sets that must tell
// strings apart without keeping them: two different strings share a digest with
// probability 2^-128, and among n strings the chance of any shared digest is about
// n^2 / 2^129 (10^-20 at a billion).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cairva {

// Thread-safe.
std::array<unsigned char, 32> sha256(std::string_view text);

struct Digest128 {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const Digest128&) const = default;
};

// Thread-safe.
Digest128 digest128(std::string_view text);

// For unordered containers: the digest's bits are already uniform.
struct Digest128Hash {
  size_t operator()(const Digest128& d) const noexcept { return static_cast<size_t>(d.low); }
};

}  // namespace cairva
