#include "render/entity_json.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace cairva::render {
namespace {

namespace json = boost::json;

constexpr UnixMicros t0 = 1'796'083'200 * micros_per_second;  // 2026-12-01T00:00:00Z

TEST(EntityJson, AllocationHasTheStatusEndpointShape) {
  store::AllocationStatus a;
  a.id = "alloc_x";
  a.agreement_id = "agr_x";
  auto& s = a.snapshot;
  s.state = core::AllocationState::active;
  s.terms.window = {t0, t0 + 3600 * micros_per_second};
  s.terms.limits = {60, 1000, 4};
  s.terms.allowance = {100, 50};
  s.booked = {30, 10};
  s.held = {80, 5};
  s.requests_last_minute = 7;
  s.tokens_last_minute = 40;
  s.in_flight = 2;
  s.usage_pending = 1;
  const json::value v = json::parse(allocation_json(a));
  const json::value want = json::parse(R"({
    "object":"allocation","id":"alloc_x","agreement_id":"agr_x","state":"active",
    "window":{"starts_at":"2026-12-01T00:00:00Z","ends_at":"2026-12-01T01:00:00Z"},
    "limits":{"requests_per_minute":60,"tokens_per_minute":1000,"max_concurrency":4},
    "allowance":{"input_tokens":100,"output_tokens":50},
    "used":{"input_tokens":30,"output_tokens":10},
    "held":{"input_tokens":80,"output_tokens":5},
    "remaining":{"input_tokens":0,"output_tokens":35},
    "current":{"requests_last_minute":7,"tokens_last_minute":40,"in_flight":2,"usage_pending":1}})");
  EXPECT_EQ(v, want);
}

TEST(EntityJson, ProviderEventHasNullEvidence) {
  store::UsageEventRow e{"evt_1",
                         "alloc_1",
                         "req_1",
                         "chatcmpl-1",
                         {3, 4},
                         core::EventSource::provider,
                         core::Finality::reported,
                         "ignored",
                         t0};
  const json::value v = json::parse(event_json(e));
  EXPECT_EQ(v.at("evidence"), nullptr);
  EXPECT_EQ(v.at("source"), "provider");
  EXPECT_EQ(v.at("finality"), "reported");
  EXPECT_EQ(v.at("booked_at"), "2026-12-01T00:00:00Z");
}

TEST(EntityJson, RequestShowsFinishTimeAndProviderIdWhenKnown) {
  store::RequestRow r;
  r.id = "req_1";
  r.allocation_id = "alloc_1";
  r.state = core::RequestState::booked;
  r.started_at = t0;
  r.finished_at = t0 + 1'500'000;
  r.model = "m";
  r.stream = true;
  r.provider_request_id = "chatcmpl-9";
  const json::value v = json::parse(request_json(r));
  EXPECT_EQ(v.at("finished_at"), "2026-12-01T00:00:01.500000Z");
  EXPECT_EQ(v.at("provider_request_id"), "chatcmpl-9");
  EXPECT_EQ(v.at("stream"), true);
  EXPECT_EQ(v.at("state"), "booked");
}

TEST(EntityJson, ErrorBodyIsOpenAiShaped) {
  EXPECT_EQ(
      error_json(ErrorCode::not_pending, "request req_1 is \"booked\""),
      R"({"error":{"type":"not_pending","code":"not_pending","message":"request req_1 is \"booked\""}})");
}

}  // namespace
}  // namespace cairva::render
