// Identifiers (agr_, alloc_, key_, req_, evt_), API key secrets (cv_), and their hashing.
#pragma once

#include <string>
#include <string_view>

namespace cairva {

// A fresh random id: `prefix` + "_" + 24 lowercase base32 characters (120 bits).
// Thread-safe.
std::string new_id(std::string_view prefix);

// A fresh API key secret: "cv_" + 43 base62 characters (~256 bits).
std::string new_secret();

// Hex SHA-256 of `secret`: what the store keeps instead of the secret.
std::string hash_secret(std::string_view secret);

// Compares two strings in time independent of where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace cairva
