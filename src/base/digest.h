// SHA-256 of a string (what key secrets are stored as), and a 96-bit digest for sets that
// must tell strings apart without keeping them: the first 96 bits of XXH3's 128-bit hash.
// Two different strings share a digest with probability ~2^-96, and among n strings the
// chance of any shared digest is about n^2 / 2^97 (~6e-12 at a billion, ~6e-18 at a
// million). XXH3 is not a cryptographic hash: someone who chose the strings could make two
// collide. The digests key the provider request ids an allocation booked
// (core/booked_ids.h); those ids come from the supplier's provider, not from buyers, and a
// collision would only make a request usage_pending with a recorded conflict, never book it
// free. The digests live in memory only, so the function may change between versions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace cairva {

// Thread-safe.
std::array<unsigned char, 32> sha256(std::string_view text);

// Three 32-bit words, not a uint64 and a uint32: 12 bytes with 4-byte alignment, so it
// packs into 4-byte-aligned slots (the ledger's 20-byte one) with no padding and no
// unaligned 64-bit access.
struct Digest96 {
  std::array<uint32_t, 3> words{};
  bool operator==(const Digest96&) const = default;
};
static_assert(sizeof(Digest96) == 12 && alignof(Digest96) == 4);

// Thread-safe.
Digest96 digest96(std::string_view text);

// For unordered containers: the digest's bits are already uniform, so two of its words
// are the hash as they are (and Boost's flat containers need not mix them again).
struct Digest96Hash {
  using is_avalanching = std::true_type;
  size_t operator()(const Digest96& d) const noexcept {
    return static_cast<size_t>((uint64_t{d.words[0]} << 32) | d.words[1]);
  }
};

}  // namespace cairva
