#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include "store/fake_store.h"

namespace cairva::metrics {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

TEST(Metrics, CountsRequestsByOutcome) {
  Metrics m;
  m.count_admitted();
  m.count_admitted();
  m.count_refused(ErrorCode::rate_limited);
  m.count_refusal(core::Refusal::max_concurrency);
  const std::string text = m.render({});
  EXPECT_TRUE(has_line(text, "# TYPE cairva_requests_total counter"));
  EXPECT_TRUE(has_line(text, "cairva_requests_total{outcome=\"admitted\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_requests_total{outcome=\"rate_limited\"} 1"));
  EXPECT_TRUE(has_line(text, "cairva_requests_total{outcome=\"allocation_exhausted\"} 0"));
  EXPECT_TRUE(has_line(text, "cairva_admission_refusals_total{reason=\"max_concurrency\"} 1"));
}

TEST(Metrics, BuildInfoIsOneGaugeOnceSet) {
  Metrics m;
  EXPECT_EQ(m.render({}).find("cairva_build_info"), std::string::npos);
  m.set_build_info({"0.1.0", "1e8b2339d4ad-dirty", "sqlite 5"});
  const std::string text = m.render({});
  EXPECT_TRUE(has_line(text, "# TYPE cairva_build_info gauge"));
  EXPECT_TRUE(has_line(
      text,
      R"(cairva_build_info{version="0.1.0",commit="1e8b2339d4ad-dirty",schema="sqlite 5"} 1)"));
  m.set_build_info({"1.0\"x", "c\nd", "postgresql 3"});
  EXPECT_TRUE(
      has_line(m.render({}),
               R"(cairva_build_info{version="1.0\"x",commit="c\nd",schema="postgresql 3"} 1)"));
}

TEST(Metrics, CountsAccessLogLinesDropped) {
  Metrics m;
  m.count_access_log_dropped();
  EXPECT_TRUE(has_line(m.render({}), "cairva_access_log_dropped_lines_total 1"));
}

TEST(Metrics, ProviderLatencyHistogramIsCumulativeInSeconds) {
  Metrics m;
  m.observe_provider_latency_us(3'000);        // <= 5 ms
  m.observe_provider_latency_us(5'000);        // <= 5 ms (bounds are inclusive)
  m.observe_provider_latency_us(200'000);      // <= 250 ms
  m.observe_provider_latency_us(900'000'000);  // beyond the last bucket
  const std::string text = m.render({});
  EXPECT_TRUE(has_line(text, "# TYPE cairva_provider_latency_seconds histogram"));
  EXPECT_TRUE(has_line(text, "cairva_provider_latency_seconds_bucket{le=\"0.005\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_provider_latency_seconds_bucket{le=\"0.1\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_provider_latency_seconds_bucket{le=\"0.25\"} 3"));
  EXPECT_TRUE(has_line(text, "cairva_provider_latency_seconds_bucket{le=\"600\"} 3"));
  EXPECT_TRUE(has_line(text, "cairva_provider_latency_seconds_bucket{le=\"+Inf\"} 4"));
  EXPECT_TRUE(has_line(text, "cairva_provider_latency_seconds_count 4"));
  EXPECT_TRUE(has_line(text, "cairva_provider_latency_seconds_sum 900.208"));
}

TEST(Metrics, StoreWaitHistogramsAreLabelledByOperation) {
  Metrics m;
  m.observe_store_wait_us(StoreWait::admit, 80);       // <= 100 µs
  m.observe_store_wait_us(StoreWait::admit, 700);      // <= 1 ms
  m.observe_store_wait_us(StoreWait::settle, 30'000);  // <= 100 ms
  const std::string text = m.render({});
  EXPECT_TRUE(has_line(text, "# TYPE cairva_store_wait_seconds histogram"));
  EXPECT_TRUE(has_line(text, "cairva_store_wait_seconds_bucket{op=\"admit\",le=\"0.0001\"} 1"));
  EXPECT_TRUE(has_line(text, "cairva_store_wait_seconds_bucket{op=\"admit\",le=\"0.001\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_store_wait_seconds_bucket{op=\"admit\",le=\"+Inf\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_store_wait_seconds_sum{op=\"admit\"} 0.00078"));
  EXPECT_TRUE(has_line(text, "cairva_store_wait_seconds_count{op=\"admit\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_store_wait_seconds_bucket{op=\"settle\",le=\"0.025\"} 0"));
  EXPECT_TRUE(has_line(text, "cairva_store_wait_seconds_bucket{op=\"settle\",le=\"0.1\"} 1"));
  EXPECT_TRUE(has_line(text, "cairva_store_wait_seconds_count{op=\"settle\"} 1"));
}

TEST(Metrics, StreamRelayHistogramIsInSeconds) {
  Metrics m;
  m.observe_stream_relay_us(40);     // <= 50 µs
  m.observe_stream_relay_us(3'000);  // <= 5 ms
  const std::string text = m.render({});
  EXPECT_TRUE(has_line(text, "# TYPE cairva_stream_relay_seconds histogram"));
  EXPECT_TRUE(has_line(text, "cairva_stream_relay_seconds_bucket{le=\"2.5e-05\"} 0"));
  EXPECT_TRUE(has_line(text, "cairva_stream_relay_seconds_bucket{le=\"5e-05\"} 1"));
  EXPECT_TRUE(has_line(text, "cairva_stream_relay_seconds_bucket{le=\"0.005\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_stream_relay_seconds_bucket{le=\"+Inf\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_stream_relay_seconds_count 2"));
}

TEST(Metrics, CountsBookingsAndCommitBatches) {
  Metrics m;
  m.count_booking(core::BookResult::booked, {10, 5});
  m.count_booking(core::BookResult::conflict, {99, 99});
  m.count_usage_missing();
  m.observe_commit_batch(3);
  m.observe_commit_batch(1);
  const std::string text = m.render({});
  EXPECT_TRUE(has_line(text, "cairva_bookings_total{result=\"booked\"} 1"));
  EXPECT_TRUE(has_line(text, "cairva_bookings_total{result=\"conflict\"} 1"));
  EXPECT_TRUE(has_line(text, "cairva_booked_tokens_total{direction=\"input\"} 10"));
  EXPECT_TRUE(has_line(text, "cairva_booked_tokens_total{direction=\"output\"} 5"));
  EXPECT_TRUE(has_line(text, "cairva_usage_missing_total 1"));
  EXPECT_TRUE(has_line(text, "cairva_store_commit_batch_writes_bucket{le=\"1\"} 1"));
  EXPECT_TRUE(has_line(text, "cairva_store_commit_batch_writes_bucket{le=\"4\"} 2"));
  EXPECT_TRUE(has_line(text, "cairva_store_commit_batch_writes_sum 4"));
}

TEST(Metrics, RendersPerAllocationGaugesFromTheStore) {
  store::AllocationStatus a;
  a.id = "alloc_a";
  a.snapshot.in_flight = 3;
  a.snapshot.usage_pending = 2;
  a.snapshot.held = {40, 50};
  store::AllocationStatus b;
  b.id = "alloc_b";
  b.snapshot.usage_pending = 1;
  const std::string text = Metrics().render({a, b});
  EXPECT_TRUE(has_line(text, "cairva_usage_pending_requests 3"));
  EXPECT_TRUE(has_line(text, "cairva_allocations 2"));
  EXPECT_TRUE(has_line(text, "cairva_allocation_in_flight{allocation=\"alloc_a\"} 3"));
  EXPECT_TRUE(has_line(text, "cairva_allocation_usage_pending{allocation=\"alloc_b\"} 1"));
  EXPECT_TRUE(has_line(
      text, "cairva_allocation_held_tokens{allocation=\"alloc_a\",direction=\"output\"} 50"));
}

TEST(Metrics, RenderMetricsReportsStoreDownWithoutFailing) {
  store::testing::FakeStore store({});
  std::string up = render_metrics(store);
  EXPECT_TRUE(has_line(up, "cairva_store_up 1"));
  store.fail_everything = true;
  std::string down = render_metrics(store);
  EXPECT_TRUE(has_line(down, "cairva_store_up 0"));
  EXPECT_TRUE(has_line(down, "# store error: store down"));
}

}  // namespace
}  // namespace cairva::metrics
