#include "core/booked_ids.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace cairva::core {
namespace {

constexpr int64_t kU32Max = std::numeric_limits<uint32_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

TEST(BookedIds, ASlotIsTwentyBytes) { EXPECT_EQ(BookedIds::slot_bytes, 20u); }

TEST(BookedIds, AFreeIdIsClaimedAndABookedOneReturnsItsEarlierCounts) {
  BookedIds ids;
  const BookedIds::Claim first = ids.claim("chatcmpl-1", {25, 80});
  EXPECT_TRUE(first.claimed);
  EXPECT_EQ(first.booked, (Tokens{25, 80}));
  const BookedIds::Claim again = ids.claim("chatcmpl-1", {30, 90});
  EXPECT_FALSE(again.claimed);
  EXPECT_EQ(again.booked, (Tokens{25, 80}));  // the earlier counts stand
  EXPECT_TRUE(ids.claim("chatcmpl-2", {30, 90}).claimed);
  EXPECT_EQ(ids.size(), 2u);
}

TEST(BookedIds, CountsAtAndAboveUint32MaxComeBackExactly) {
  // Every pair of these, as (input, output): both below, at and above the slot's range.
  const int64_t edges[] = {0, kU32Max - 1, kU32Max, kU32Max + 1, int64_t{5'000'000'000}, kI64Max};
  BookedIds ids;
  size_t expected_overflow = 0;
  for (const int64_t in : edges) {
    for (const int64_t out : edges) {
      const std::string id = "p-" + std::to_string(in) + "-" + std::to_string(out);
      ASSERT_TRUE(ids.claim(id, {in, out}).claimed) << id;
      if (in >= kU32Max || out >= kU32Max) ++expected_overflow;
    }
  }
  EXPECT_EQ(ids.overflow_size(), expected_overflow);
  for (const int64_t in : edges) {
    for (const int64_t out : edges) {
      const std::string id = "p-" + std::to_string(in) + "-" + std::to_string(out);
      const BookedIds::Claim c = ids.claim(id, {1, 1});
      EXPECT_FALSE(c.claimed) << id;
      EXPECT_EQ(c.booked, (Tokens{in, out})) << id;
    }
  }
  EXPECT_EQ(ids.overflow_size(), expected_overflow);  // a refused claim adds nothing
}

TEST(BookedIds, AssignReplacesCountsInEitherDirectionAcrossTheSlotsRange) {
  BookedIds ids;
  ids.assign("p", {kU32Max + 7, 3});
  EXPECT_EQ(ids.claim("p", {0, 0}).booked, (Tokens{kU32Max + 7, 3}));
  ids.assign("p", {kU32Max - 1, kU32Max - 1});  // now fits: the overflow entry goes
  EXPECT_EQ(ids.overflow_size(), 0u);
  EXPECT_EQ(ids.claim("p", {0, 0}).booked, (Tokens{kU32Max - 1, kU32Max - 1}));
  ids.assign("p", {2, kU32Max});
  EXPECT_EQ(ids.overflow_size(), 1u);
  EXPECT_EQ(ids.claim("p", {0, 0}).booked, (Tokens{2, kU32Max}));
  EXPECT_EQ(ids.size(), 1u);
}

TEST(BookedIds, RestoredCountsOutsideTheBookingRangeStayExact) {
  // Restored rows come from the store and are not asserted on: whatever it holds comes back.
  BookedIds ids;
  ids.assign("p", {-1, 3});
  EXPECT_EQ(ids.claim("p", {0, 0}).booked, (Tokens{-1, 3}));
}

// Many ids: every one comes back with its counts, and no shard outgrows shard_ids_max (a
// booking never moves more ids than that: one map of all would move every id as it grows).
TEST(BookedIds, ManyIdsSplitIntoBoundedShardsAndAllComeBack) {
  BookedIds ids;
  constexpr int64_t n = 100'000;
  for (int64_t i = 0; i < n; ++i) {
    const std::string id = "chatcmpl-" + std::to_string(i);
    if (i % 3 == 0) {
      ids.assign(id, {i, i % 1000 == 0 ? kU32Max + i : 2 * i});  // restored rows, some overflowing
    } else {
      ASSERT_TRUE(ids.claim(id, {i, 2 * i}).claimed) << id;
    }
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(n));
  EXPECT_GT(ids.shards(), 8u);
  EXPECT_LE(ids.largest_shard(), BookedIds::shard_ids_max);
  for (int64_t i = 0; i < n; ++i) {
    const std::string id = "chatcmpl-" + std::to_string(i);
    const BookedIds::Claim c = ids.claim(id, {0, 0});
    ASSERT_FALSE(c.claimed) << id;
    ASSERT_EQ(c.booked, (Tokens{i, i % 3 == 0 && i % 1000 == 0 ? kU32Max + i : 2 * i})) << id;
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(n));  // refused claims add nothing
  EXPECT_EQ(ids.overflow_size(), static_cast<size_t>((n - 1) / 3000 + 1));
  ids.assign("chatcmpl-7", {1, 1});  // an id already there: replaced, not counted twice
  EXPECT_EQ(ids.size(), static_cast<size_t>(n));
  EXPECT_EQ(ids.claim("chatcmpl-7", {0, 0}).booked, (Tokens{1, 1}));
}

}  // namespace
}  // namespace cairva::core
