#include "base/digest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <unordered_set>

namespace cairva {

TEST(Digest96, IsTheFirstTwelveBytesOfSha256) {
  // SHA-256("abc") = ba7816bf8f01cfea 414140de 5dae2223 b00361a3...
  const Digest96 d = digest96("abc");
  const unsigned char expected[12] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01,
                                      0xcf, 0xea, 0x41, 0x41, 0x40, 0xde};
  Digest96 e;
  std::memcpy(e.words.data(), expected, sizeof expected);
  EXPECT_EQ(d, e);
  EXPECT_EQ(digest96(""), digest96(std::string()));
}

TEST(Digest96, TellsManyNearbyStringsApart) {
  std::unordered_set<Digest96, Digest96Hash> seen;
  for (int i = 0; i < 100'000; ++i)
    ASSERT_TRUE(seen.insert(digest96("chatcmpl-" + std::to_string(i))).second);
  EXPECT_FALSE(seen.insert(digest96("chatcmpl-42")).second);
}

}  // namespace cairva
