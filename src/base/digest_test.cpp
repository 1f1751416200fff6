#include "base/digest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <unordered_set>

namespace cairva {

TEST(Digest128, IsTheFirstHalfOfSha256) {
  // SHA-256("abc") = ba7816bf8f01cfea 414140de5dae2223 b00361a3...
  const Digest128 d = digest128("abc");
  const unsigned char expected[16] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                      0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23};
  Digest128 e;
  std::memcpy(&e.high, expected, 8);
  std::memcpy(&e.low, expected + 8, 8);
  EXPECT_EQ(d, e);
  EXPECT_EQ(digest128(""), digest128(std::string()));
}

TEST(Digest128, TellsManyNearbyStringsApart) {
  std::unordered_set<Digest128, Digest128Hash> seen;
  for (int i = 0; i < 100'000; ++i) ASSERT_TRUE(seen.insert(digest128("chatcmpl-" + std::to_string(i))).second);
  EXPECT_FALSE(seen.insert(digest128("chatcmpl-42")).second);
}

}  // namespace cairva
