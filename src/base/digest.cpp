#include "base/digest.h"

#include <openssl/evp.h>

#include <array>
#include <cstring>

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
  const auto md = sha256(text);
  Digest96 d;
  static_assert(sizeof d.words <= sizeof md);
  std::memcpy(d.words.data(), md.data(), sizeof d.words);
  return d;
}

}  // namespace cairva
