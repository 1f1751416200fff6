#include "base/ids.h"

#include <gtest/gtest.h>

#include <set>

namespace cairva {

TEST(Ids, CarryPrefixAndAreUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto id = new_id("req");
    ASSERT_EQ(id.rfind("req_", 0), 0u);
    ASSERT_EQ(id.size(), 4u + 24u);
    ASSERT_TRUE(seen.insert(id).second);
  }
}

TEST(Secrets, HavePrefixAndHashDeterministically) {
  const auto s = new_secret();
  EXPECT_EQ(s.rfind("cv_", 0), 0u);
  EXPECT_EQ(s.size(), 46u);
  EXPECT_EQ(hash_secret(s), hash_secret(s));
  EXPECT_NE(hash_secret(s), hash_secret(new_secret()));
  EXPECT_EQ(hash_secret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Secrets, ConstantTimeEqualComparesContent) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
}

}  // namespace cairva
