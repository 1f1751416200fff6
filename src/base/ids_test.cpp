#include "base/ids.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

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

TEST(Ids, TimeOrderedHaveTheSameShapeAndEncodeTheirCreationTime) {
  const auto micros = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const int64_t before = micros();
    const auto id = new_time_ordered_id("req");
    const int64_t after = micros();
    ASSERT_EQ(id.rfind("req_", 0), 0u);
    ASSERT_EQ(id.size(), 4u + 24u);
    ASSERT_EQ(id.find_first_not_of("abcdefghijklmnopqrstuvwxyz234567", 4), std::string::npos);
    ASSERT_TRUE(seen.insert(id).second);
    // The first 11 characters are the creation time, most significant first, in an
    // alphabet whose ASCII order is its numeric order: string order is time order.
    const std::string ordered = "234567abcdefghijklmnopqrstuvwxyz";
    int64_t t = 0;
    for (size_t k = 4; k < 15; ++k) t = t * 32 + static_cast<int64_t>(ordered.find(id[k]));
    ASSERT_LE(before, t);
    ASSERT_LE(t, after);
  }
}

// Ids draw from a per-thread buffer of random bytes refilled in bulk: across refills and
// across threads no two ids repeat, and every character is used.
TEST(Ids, AreUniqueAcrossThreadsAndBufferRefills) {
  constexpr int threads = 4, per_thread = 3000;  // ~17 refills of each thread's buffer
  std::vector<std::vector<std::string>> made(threads);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&made, t] {
      for (int i = 0; i < per_thread; ++i) {
        made[t].push_back(i % 2 ? new_id("evt") : new_time_ordered_id("req"));
      }
    });
  }
  for (auto& w : workers) w.join();
  std::set<std::string> seen;
  std::set<char> chars;
  for (const auto& ids : made) {
    for (const auto& id : ids) {
      ASSERT_TRUE(seen.insert(id).second) << id;
      chars.insert(id.end() - 10, id.end());
    }
  }
  EXPECT_EQ(seen.size(), size_t{threads} * per_thread);
  EXPECT_EQ(chars.size(), 32u);
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
