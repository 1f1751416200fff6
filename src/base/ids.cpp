#include "base/ids.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "base/assert.h"
#include "base/digest.h"

namespace cairva {
namespace {

constexpr int id_random_chars = 24;
constexpr int secret_random_chars = 43;

void random_bytes(unsigned char* out, size_t n) {
  CAIRVA_ASSERT(RAND_bytes(out, static_cast<int>(n)) == 1);
}

// Ids are made on the request path (two per request); one RAND_bytes call costs about as
// much as filling a few KiB (OpenSSL 3 looks up its DRBG and checks for a fork each time),
// so ids draw from a per-thread buffer filled in bulk. Every byte is used once. Secrets do
// not use it: they are drawn directly and never sit in memory before they are needed.
// Cairva never forks, so the buffer is never shared with a child.
constexpr size_t id_random_buffer_bytes = 4096;

void id_random_bytes(unsigned char* out, size_t n) {
  struct Buffer {
    std::array<unsigned char, id_random_buffer_bytes> bytes;
    size_t used = id_random_buffer_bytes;
  };
  thread_local Buffer b;
  CAIRVA_ASSERT(n <= b.bytes.size());
  if (b.bytes.size() - b.used < n) {
    random_bytes(b.bytes.data(), b.bytes.size());
    b.used = 0;
  }
  std::memcpy(out, b.bytes.data() + b.used, n);
  b.used += n;
}

}  // namespace

std::string new_id(std::string_view prefix) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::array<unsigned char, id_random_chars> raw;
  id_random_bytes(raw.data(), raw.size());
  std::string id(prefix.size() + 1 + id_random_chars, '_');
  prefix.copy(id.data(), prefix.size());
  char* out = id.data() + prefix.size() + 1;
  for (unsigned char b : raw) *out++ = kAlphabet[b & 31];
  return id;
}

std::string new_time_ordered_id(std::string_view prefix) {
  // The base32 alphabet in ASCII order, so that string order is numeric order.
  static constexpr char kOrdered[] = "234567abcdefghijklmnopqrstuvwxyz";
  constexpr int time_chars = 11;  // 55 bits of microseconds: past the year 3000
  static_assert(time_chars < id_random_chars);
  const auto us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count());
  std::array<unsigned char, id_random_chars - time_chars> raw;
  id_random_bytes(raw.data(), raw.size());
  // Written in place: two ids per request, and push_back checks the capacity per character.
  std::string id(prefix.size() + 1 + id_random_chars, '_');
  prefix.copy(id.data(), prefix.size());
  char* out = id.data() + prefix.size() + 1;
  for (int i = time_chars - 1; i >= 0; --i) *out++ = kOrdered[(us >> (5 * i)) & 31];
  for (unsigned char b : raw) *out++ = kOrdered[b & 31];
  return id;
}

std::string new_secret() {
  static constexpr char kAlphabet[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string s = "cv_";
  while (s.size() < 3 + secret_random_chars) {
    std::array<unsigned char, 64> raw;
    random_bytes(raw.data(), raw.size());
    for (unsigned char b : raw) {
      if (b >= 248) continue;  // 248 = 4 * 62: rejection keeps the choice uniform
      s.push_back(kAlphabet[b % 62]);
      if (s.size() == 3 + secret_random_chars) break;
    }
  }
  return s;
}

std::string hash_secret(std::string_view secret) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (unsigned char b : sha256(secret)) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace cairva
