#include "wire/responses_codec.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

std::string event(std::string_view name, std::string_view data) {
  std::string out;
  if (!name.empty()) out = "event: " + std::string(name) + "\n";
  return out + "data: " + std::string(data) + "\n\n";
}

const std::string response_in_progress =
    R"({"id":"resp_abc","object":"response","status":"in_progress","output":[],"usage":null})";

std::string created() {
  return event("response.created", R"({"type":"response.created","sequence_number":0,"response":)" +
                                       response_in_progress + "}");
}
std::string delta(std::string_view text) {
  return event(
      "response.output_text.delta",
      R"({"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,)"
      R"("content_index":0,"delta":")" +
          std::string(text) + "\"}");
}
const std::string completed_usage =
    R"({"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":7,)"
    R"("output_tokens_details":{"reasoning_tokens":0},"total_tokens":17})";
std::string terminal(std::string_view type = "response.completed",
                     std::string_view usage = completed_usage, std::string_view name = "") {
  return event(name.empty() ? type : name,
               R"({"type":")" + std::string(type) +
                   R"(","sequence_number":9,"response":{"id":"resp_abc",)"
                   R"("object":"response","status":"completed","usage":)" +
                   std::string(usage) + "}}");
}

// The data of the event `raw` holds (one data line).
bj::object data_of(const std::string& raw) {
  const auto at = raw.find("data: ");
  return bj::parse(raw.substr(at + 6, raw.find("\n\n", at) - at - 6)).as_object();
}

struct Relayed {
  std::string during;  // appended by feed
  std::string at_end;  // appended by finish
  ResponsesStreamRelay relay{false};
};

void feed_all(Relayed& r, const std::string& stream, size_t piece = 0) {
  if (piece == 0) piece = stream.size();
  for (size_t at = 0; at < stream.size(); at += piece) {
    ASSERT_TRUE(r.relay.feed(std::string_view(stream).substr(at, piece), r.during));
  }
  r.relay.finish(r.at_end);
}

TEST(ResponsesCodec, ReadsABodysIdAndUsage) {
  const std::string body = R"({"id":"resp_1","object":"response","usage":)" + completed_usage + "}";
  auto r = ResponsesCodec::read_response(body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->id, "resp_1");
  EXPECT_EQ(r->usage, (core::Tokens{10, 7}));
  const auto tagged = bj::parse(ResponsesCodec::with_usage_source(body, *r)).as_object();
  EXPECT_EQ(tagged.at("usage_source").as_string(), "provider");
  EXPECT_EQ(tagged.at("usage").as_object().at("output_tokens").as_int64(), 7);
}

TEST(ResponsesCodec, ChatCountsOrInvalidCountsAreUsageMissing) {
  for (const std::string usage :
       {R"({"prompt_tokens":10,"completion_tokens":7})", R"({"input_tokens":10})",
        R"({"input_tokens":-1,"output_tokens":7})", R"(null)"}) {
    const std::string body = R"({"id":"resp_1","usage":)" + usage + "}";
    auto r = ResponsesCodec::read_response(body);
    ASSERT_TRUE(r.ok()) << usage;
    EXPECT_FALSE(r->usage) << usage;
    const auto tagged = bj::parse(ResponsesCodec::with_usage_source(body, *r)).as_object();
    EXPECT_EQ(tagged.at("usage_source").as_string(), "pending") << usage;
    EXPECT_TRUE(tagged.at("usage").is_null()) << usage;
  }
  EXPECT_FALSE(ResponsesCodec::read_response("{\"id\":").ok());
}

TEST(ResponsesStreamRelay, PassesEveryEventThroughAndTagsTheHeldTerminalEvent) {
  const std::string before = created() + ": keep-alive\n\n" + delta("Hel") + delta("lo");
  Relayed r;
  feed_all(r, before + terminal());
  EXPECT_EQ(r.during, before) << "every event but the terminal one, byte for byte";
  EXPECT_EQ(r.relay.provider_id(), "resp_abc");
  EXPECT_EQ(r.relay.usage(), (core::Tokens{10, 7}));
  EXPECT_TRUE(r.relay.done_seen());
  ASSERT_TRUE(r.at_end.starts_with("event: response.completed\ndata: ")) << r.at_end;
  const auto data = data_of(r.at_end);
  EXPECT_EQ(data.at("response").as_object().at("usage_source").as_string(), "provider");
  EXPECT_EQ(data.at("response").as_object().at("usage").as_object().at("total_tokens").as_int64(),
            17)
      << "the provider's own usage fields are kept";
  EXPECT_EQ(data.at("sequence_number").as_int64(), 9);
}

TEST(ResponsesStreamRelay, ReadsTheSameStreamFedOneByteAtATime) {
  const std::string stream = created() + delta("a") + terminal();
  Relayed whole, bytes;
  feed_all(whole, stream);
  feed_all(bytes, stream, 1);
  EXPECT_EQ(bytes.during, whole.during);
  EXPECT_EQ(bytes.at_end, whole.at_end);
  EXPECT_EQ(bytes.relay.usage(), whole.relay.usage());
}

TEST(ResponsesStreamRelay, IncompleteAndFailedAreTerminalToo) {
  for (const char* type : {"response.incomplete", "response.failed"}) {
    Relayed r;
    feed_all(r, created() + terminal(type));
    EXPECT_TRUE(r.relay.done_seen()) << type;
    EXPECT_EQ(r.relay.usage(), (core::Tokens{10, 7})) << type;
    EXPECT_EQ(data_of(r.at_end).at("type").as_string(), type);
  }
}

TEST(ResponsesStreamRelay, ATerminalEventWithoutUsageSaysPending) {
  Relayed r;
  feed_all(r, created() + terminal("response.completed", "null"));
  EXPECT_FALSE(r.relay.usage());
  EXPECT_TRUE(r.relay.done_seen());
  const auto response = data_of(r.at_end).at("response").as_object();
  EXPECT_EQ(response.at("usage_source").as_string(), "pending");
  EXPECT_TRUE(response.at("usage").is_null());
}

TEST(ResponsesStreamRelay, AStreamWithoutATerminalEventHasNoUsageAndEndsWithNothingAdded) {
  Relayed r;
  feed_all(r, created() + delta("a"));
  EXPECT_FALSE(r.relay.done_seen());
  EXPECT_FALSE(r.relay.usage());
  EXPECT_EQ(r.relay.provider_id(), "resp_abc");
  EXPECT_EQ(r.at_end, "");
}

TEST(ResponsesStreamRelay, ACutStreamNeverSendsItsHeldTerminalEvent) {
  ResponsesStreamRelay relay(false);
  std::string out;
  ASSERT_TRUE(relay.feed(created() + terminal(), out));
  std::string end;
  relay.finish_cut(end);
  relay.finish(end);
  EXPECT_EQ(end, "");
}

TEST(ResponsesStreamRelay, UnnamedEventsAreReadForTheirType) {
  const std::string unnamed_created =
      "data: {\"type\":\"response.created\",\"response\":" + response_in_progress + "}\n\n";
  const std::string unnamed_terminal =
      "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_abc\",\"usage\":" +
      completed_usage + "}}\n\n";
  Relayed r;
  feed_all(r, unnamed_created + unnamed_terminal);
  EXPECT_EQ(r.during, unnamed_created);
  EXPECT_EQ(r.relay.provider_id(), "resp_abc");
  EXPECT_EQ(r.relay.usage(), (core::Tokens{10, 7}));
  EXPECT_TRUE(r.at_end.starts_with("data: {"))
      << "no event name added where the provider sent none";
  EXPECT_EQ(data_of(r.at_end).at("response").as_object().at("usage_source").as_string(),
            "provider");
}

TEST(ResponsesStreamRelay, ReplacesAUsageSourceTheProviderSent) {
  Relayed r;
  feed_all(r,
           event("response.completed",
                 R"({"type":"response.completed","response":{"usage_source":"made-up","usage":)" +
                     completed_usage + "}}"));
  const auto response = data_of(r.at_end).at("response").as_object();
  EXPECT_EQ(response.at("usage_source").as_string(), "provider");
  EXPECT_EQ(response.size(), 2u);
}

TEST(ResponsesStreamRelay, NothingAfterTheTerminalEventIsRelayed) {
  Relayed r;
  feed_all(r, terminal() + delta("late") +
                  terminal("response.completed", R"({"input_tokens":1,"output_tokens":1})"));
  EXPECT_EQ(r.during, "");
  EXPECT_EQ(r.relay.usage(), (core::Tokens{10, 7}));
}

TEST(ResponsesStreamRelay, AMalformedTerminalEventPassesAsSentWithUsageMissing) {
  const std::string bad = "event: response.completed\ndata: {\"response\": nope\n\n";
  Relayed r;
  feed_all(r, created() + bad);
  EXPECT_TRUE(r.relay.done_seen());
  EXPECT_FALSE(r.relay.usage());
  EXPECT_EQ(r.at_end, bad);
}

TEST(ResponsesStreamRelay, AnEventOverTheBoundIsRefused) {
  ResponsesStreamRelay relay(false);
  std::string out;
  EXPECT_FALSE(relay.feed(
      "event: response.output_text.delta\ndata: " + std::string(sse_event_bytes_max, 'a'), out));
}

TEST(ResponsesCodec, AStreamErrorIsAnErrorEventInTheResponsesShape) {
  std::string out;
  ResponsesCodec::append_stream_error(out, ErrorCode::provider_timeout, "too \"slow\"");
  ASSERT_TRUE(out.starts_with("event: error\ndata: ")) << out;
  ASSERT_TRUE(out.ends_with("\n\n"));
  const auto data = data_of(out);
  EXPECT_EQ(data.at("type").as_string(), "error");
  EXPECT_EQ(data.at("code").as_string(), "provider_timeout");
  EXPECT_EQ(data.at("message").as_string(), "too \"slow\"");
}

}  // namespace
}  // namespace cairva::wire
