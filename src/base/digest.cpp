#include "base/digest.h"

#include <openssl/evp.h>

// Inlined from the header: the digest of a ~40-byte id is a few dozen instructions, less
// than a call into the shared library would add.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <array>

#include "base/assert.h"

namespace cairva {

std::array<unsigned char, 32> sha256(std::string_view text) {
  // Fetched once: EVP_sha256() looks the algorithm up on every call, which costs more than
  // hashing a key.
  static EVP_MD* const md_sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  CAIRVA_ASSERT(md_sha256 != nullptr);
  // One context per thread, reused: EVP_Digest creates and frees one per call.
  struct Context {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Context() { EVP_MD_CTX_free(ctx); }
  };
  thread_local const Context context;
  CAIRVA_ASSERT(context.ctx != nullptr);
  std::array<unsigned char, 32> md{};
  unsigned int len = 0;
  CAIRVA_ASSERT(EVP_DigestInit_ex2(context.ctx, md_sha256, nullptr) == 1);
  CAIRVA_ASSERT(EVP_DigestUpdate(context.ctx, text.data(), text.size()) == 1);
  CAIRVA_ASSERT(EVP_DigestFinal_ex(context.ctx, md.data(), &len) == 1);
  CAIRVA_ASSERT(len == md.size());
  return md;
}

Digest96 digest96(std::string_view text) {
  const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  Digest96 d;
  d.words[0] = static_cast<uint32_t>(h.low64);
  d.words[1] = static_cast<uint32_t>(h.low64 >> 32);
  d.words[2] = static_cast<uint32_t>(h.high64);
  return d;
}

}  // namespace cairva
