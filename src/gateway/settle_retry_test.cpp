#include "gateway/settle_retry.h"

#include <gtest/gtest.h>

#include <deque>
#include <vector>

namespace cairva::gateway {
namespace {

// A scripted store: each settle() takes the next answer and records the command.
struct Script {
  std::deque<Result<store::SettleResult>> answers;
  std::vector<store::SettleCommand> seen;
  SettlementRetry::Settle settle() {
    return [this](store::SettleCommand cmd, const store::Callback<store::SettleResult>& done) {
      seen.push_back(std::move(cmd));
      auto r = std::move(answers.front());
      answers.pop_front();
      done(std::move(r));
    };
  }
};

const Error kAway =
    make_error(ErrorCode::store_unavailable, "store unavailable: connection refused");
const Error kRefused = make_error(ErrorCode::internal_error, "value refused");

store::SettleCommand usage(const std::string& id) {
  return {id, "alloc_1", store::SettleKind::usage, "chatcmpl-" + id, {12, 34}};
}

TEST(SettlementRetry, KeepsReportsUntilTheStoreAnswersThenRecordsThemInOrder) {
  Script script;
  SettlementRetry retry(script.settle());
  ASSERT_TRUE(retry.keep(usage("req_1"), kAway));
  ASSERT_TRUE(retry.keep({"req_2", "alloc_1", store::SettleKind::failed, "", {}}, kAway));
  // Still away: one attempt, nothing dropped.
  script.answers = {kAway};
  retry.retry_all();
  EXPECT_EQ(retry.size(), 2u);
  ASSERT_EQ(script.seen.size(), 1u);
  // Back: both are recorded, oldest first, with the provider's counts.
  script.answers = {store::SettleResult{core::BookResult::booked, core::RequestState::booked},
                    store::SettleResult{core::BookResult::failed, core::RequestState::failed}};
  retry.retry_all();
  EXPECT_EQ(retry.size(), 0u);
  ASSERT_EQ(script.seen.size(), 3u);
  EXPECT_EQ(script.seen[1].request_id, "req_1");
  EXPECT_EQ(script.seen[1].kind, store::SettleKind::usage);
  EXPECT_EQ(script.seen[1].usage, (core::Tokens{12, 34}));
  EXPECT_EQ(script.seen[1].provider_request_id, "chatcmpl-req_1");
  EXPECT_EQ(script.seen[2].request_id, "req_2");
  EXPECT_EQ(script.seen[2].kind, store::SettleKind::failed);
}

TEST(SettlementRetry, ABookingTheStoreRefusesKeepsTheCountsOnTheRequest) {
  Script script;
  SettlementRetry retry(script.settle());
  ASSERT_TRUE(retry.keep(usage("req_1"), kRefused));
  ASSERT_TRUE(retry.keep({"req_2", "alloc_1", store::SettleKind::usage_missing, "", {}}, kAway));
  script.answers = {
      kRefused, store::SettleResult{core::BookResult::pending, core::RequestState::usage_pending},
      kRefused};
  retry.retry_all();
  ASSERT_EQ(script.seen.size(), 3u);
  EXPECT_EQ(script.seen[1].kind, store::SettleKind::usage_unbooked);
  EXPECT_EQ(script.seen[1].usage, (core::Tokens{12, 34}));
  EXPECT_EQ(script.seen[1].provider_request_id, "chatcmpl-req_1");
  EXPECT_EQ(script.seen[2].request_id, "req_2");
  EXPECT_EQ(retry.size(), 0u);  // the refused usage_missing is dropped: the sweep covers it
}

TEST(SettlementRetry, IsBounded) {
  Script script;
  SettlementRetry retry(script.settle());
  for (size_t i = 0; i < kept_settlements_max; ++i) ASSERT_TRUE(retry.keep(usage("req"), kAway));
  EXPECT_FALSE(retry.keep(usage("req_over"), kAway));
  EXPECT_EQ(retry.size(), kept_settlements_max);
  script.answers.assign(kept_settlements_max, store::SettleResult{core::BookResult::duplicate,
                                                                  core::RequestState::booked});
  retry.retry_all();
  EXPECT_EQ(retry.size(), 0u);
}

}  // namespace
}  // namespace cairva::gateway
