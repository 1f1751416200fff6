// Identifiers (agr_, alloc_, key_, req_, evt_), API key secrets (cv_), and their hashing.
#pragma once

#include <string>
#include <string_view>

namespace cairva {

// A fresh random id: `prefix` + "_" + 24 lowercase base32 characters (120 bits).
// Thread-safe.
std::string new_id(std::string_view prefix);

// A fresh id of the same shape whose first 11 characters encode the wall clock's
// microseconds (base32, in ASCII order) and whose last 13 are random (65 bits): ids made
// later sort later, so a store's index on them grows at its end instead of writing a random
// page per insert. For request ids, which are created on the hot path. Thread-safe.
std::string new_time_ordered_id(std::string_view prefix);

// A fresh API key secret: "cv_" + 43 base62 characters (~256 bits).
std::string new_secret();

// Hex SHA-256 of `secret`: what the store keeps instead of the secret.
std::string hash_secret(std::string_view secret);

// Compares two strings in time independent of where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace cairva
