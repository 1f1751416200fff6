#include "gateway/open_requests.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>

namespace cairva::gateway {
namespace {

TEST(OpenRequests, ListsTheRequestsStillOpenAsCutSettlementsUnderTheIdSeen) {
  OpenRequests open;
  const std::string r1 = "req_1", r2 = "req_2", r3 = "req_3", alloc = "alloc_1";
  std::optional<OpenRequests::Entry> first(std::in_place, &open, r1, alloc);
  {
    OpenRequests::Entry second(&open, r2, alloc);
    OpenRequests::Entry third(&open, r3, alloc);
    third.set_provider_request_id("chatcmpl-3");
    EXPECT_EQ(open.size(), 3u);
  }
  EXPECT_EQ(open.size(), 1u) << "a request that ended left the list";
  OpenRequests::Entry fourth(&open, r2, alloc);
  fourth.set_provider_request_id("chatcmpl-4");
  const auto cuts = open.cut_settlements();
  ASSERT_EQ(cuts.size(), 2u);
  EXPECT_EQ(cuts[0].request_id, "req_1");
  EXPECT_EQ(cuts[0].provider_request_id, "") << "no id seen: the request keeps the one it has";
  EXPECT_EQ(cuts[1].provider_request_id, "chatcmpl-4");
  for (const auto& c : cuts) {
    EXPECT_EQ(c.kind, store::SettleKind::usage_missing);
    EXPECT_EQ(c.allocation_id, "alloc_1");
  }
  first.reset();
  EXPECT_EQ(open.cut_settlements().size(), 1u);
}

TEST(OpenRequests, AnEntryWithoutAListKeepsNothing) {
  const std::string id = "req_1";
  OpenRequests::Entry e(nullptr, id, id);
  e.set_provider_request_id("x");
}

}  // namespace
}  // namespace cairva::gateway
