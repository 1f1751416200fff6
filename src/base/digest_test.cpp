#include "base/digest.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_set>

namespace cairva {

TEST(Sha256, IsTheStandardDigest) {
  // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad
  const std::array<unsigned char, 32> expected = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                                  0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
                                                  0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
                                                  0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  EXPECT_EQ(sha256("abc"), expected);
}

TEST(Digest96, DependsOnEveryByteAndTheLength) {
  const std::string base(64, 'x');
  std::unordered_set<Digest96, Digest96Hash> seen{digest96(base)};
  for (size_t i = 0; i < base.size(); ++i) {
    std::string changed = base;
    changed[i] = 'y';
    EXPECT_TRUE(seen.insert(digest96(changed)).second) << "byte " << i;
  }
  EXPECT_TRUE(seen.insert(digest96(base + '\0')).second);
  EXPECT_TRUE(seen.insert(digest96(base.substr(1))).second);
  EXPECT_EQ(digest96(base), digest96(std::string(64, 'x')));
  EXPECT_EQ(digest96(""), digest96(std::string()));
}

// Every word of the digest varies: the map hashes two of them, the shard directory the third.
TEST(Digest96, EachWordVaries) {
  std::unordered_set<uint32_t> words[3];
  for (int i = 0; i < 1000; ++i) {
    const Digest96 d = digest96("msg_" + std::to_string(i));
    for (int w = 0; w < 3; ++w) words[w].insert(d.words[w]);
  }
  for (const auto& w : words) EXPECT_EQ(w.size(), 1000u);
}

TEST(Digest96, TellsManyNearbyStringsApart) {
  std::unordered_set<Digest96, Digest96Hash> seen;
  for (int i = 0; i < 100'000; ++i)
    ASSERT_TRUE(seen.insert(digest96("chatcmpl-" + std::to_string(i))).second);
  EXPECT_FALSE(seen.insert(digest96("chatcmpl-42")).second);
}

}  // namespace cairva
