#include "wire/messages_codec.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

std::string event(std::string_view name, std::string_view data) {
  return "event: " + std::string(name) + "\ndata: " + std::string(data) + "\n\n";
}

const std::string start = event(
    "message_start",
    R"({"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],)"
    R"("usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":5,"output_tokens":1}}})");
const std::string block_start =
    event("content_block_start",
          R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
const std::string ping = event("ping", R"({"type": "ping"})");
const std::string text_delta =
    event("content_block_delta",
          R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})");
const std::string block_stop =
    event("content_block_stop", R"({"type":"content_block_stop","index":0})");
const std::string delta = event(
    "message_delta",
    R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}})");
const std::string stop = event("message_stop", R"({"type":"message_stop"})");

std::string whole_stream() {
  return start + block_start + ping + text_delta + block_stop + delta + stop;
}

// What the relay gives for `pieces` fed in order, then finish() (or finish_cut()).
std::string relayed(MessagesStreamRelay& relay, const std::vector<std::string>& pieces,
                    bool cut = false) {
  std::string out;
  for (const auto& p : pieces) EXPECT_TRUE(relay.feed(p, out));
  if (cut) {
    relay.finish_cut(out);
  } else {
    relay.finish(out);
  }
  return out;
}

TEST(ReadMessage, BooksInputWithBothCacheCountsAndOutput) {
  const auto r = read_message(
      R"({"id":"msg_1","type":"message","content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":3,)"
      R"("cache_read_input_tokens":5,"output_tokens":7,"service_tier":"standard"}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->id, "msg_1");
  ASSERT_TRUE(r->usage);
  EXPECT_EQ(r->usage->input, 18);
  EXPECT_EQ(r->usage->output, 7);
}

TEST(ReadMessage, AbsentOrNullCacheCountsAreZero) {
  const auto r = read_message(
      R"({"id":"m","usage":{"input_tokens":4,"cache_read_input_tokens":null,"output_tokens":2}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->usage, (core::Tokens{4, 2}));
}

TEST(ReadMessage, UsageThatIsMissingOrNotCountsIsMissing) {
  for (
      const char* body :
      {R"({"id":"m"})", R"({"id":"m","usage":null})", R"({"id":"m","usage":{"input_tokens":4}})",
       R"({"id":"m","usage":{"input_tokens":4,"output_tokens":-1}})",
       R"({"id":"m","usage":{"input_tokens":4,"output_tokens":2,"cache_creation_input_tokens":1.5}})",
       R"({"id":"m","usage":{"input_tokens":4,"output_tokens":2,"output_tokens":3}})"}) {
    const auto r = read_message(body);
    ASSERT_TRUE(r.ok()) << body;
    EXPECT_FALSE(r->usage) << body;
  }
  EXPECT_FALSE(read_message(R"({"id": trunc)").ok());
}

TEST(MessagesCodec, TagsAPlainBodyWithItsUsageSource) {
  const std::string body = R"({"id":"msg_1","usage":{"input_tokens":1,"output_tokens":2}})";
  const auto read = read_message(body);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(
      MessagesCodec::with_usage_source(body, *read),
      R"({"id":"msg_1","usage":{"input_tokens":1,"output_tokens":2},"usage_source":"provider"})");
  const std::string missing = R"({"id":"msg_1","usage":{"input_tokens":1}})";
  const auto pending = read_message(missing);
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(MessagesCodec::with_usage_source(missing, *pending),
            R"({"id":"msg_1","usage":null,"usage_source":"pending"})");
}

TEST(MessagesCodec, EndsACutStreamWithAnAnthropicErrorEvent) {
  std::string out;
  MessagesCodec::append_stream_error(out, ErrorCode::provider_timeout, "too slow");
  EXPECT_EQ(
      out,
      "event: error\ndata: "
      R"({"type":"error","error":{"type":"timeout_error","message":"too slow","code":"provider_timeout"}})"
      "\n\n");
}

TEST(MessagesStreamRelay, PassesEveryEventAndTagsMessageDeltaWithItsUsageSource) {
  MessagesStreamRelay relay(false);
  const std::string out = relayed(relay, {whole_stream()});
  const std::string tagged = event(
      "message_delta",
      R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7},"usage_source":"provider"})");
  EXPECT_EQ(out, start + block_start + ping + text_delta + block_stop + tagged + stop);
  EXPECT_TRUE(relay.done_seen());
  EXPECT_EQ(relay.provider_id(), "msg_01");
  EXPECT_EQ(relay.usage(), (core::Tokens{18, 7}));
}

TEST(MessagesStreamRelay, HoldsMessageDeltaAndStopUntilTheUsageIsSettled) {
  MessagesStreamRelay relay(false);
  std::string out;
  ASSERT_TRUE(relay.feed(start + text_delta + delta, out));
  EXPECT_EQ(out, start + text_delta);
  ASSERT_TRUE(relay.feed(ping + stop, out));
  EXPECT_EQ(out, start + text_delta) << "what follows message_delta stays with it";
  relay.finish(out);
  EXPECT_NE(out.find(R"("usage_source":"provider"})"
                     "\n\n" +
                     ping + stop),
            std::string::npos)
      << out;
}

TEST(MessagesStreamRelay, TakesTheLatestValueOfEachCountFromAnyEvent) {
  MessagesStreamRelay relay(false);
  const std::string later_input = event(
      "message_delta",
      R"({"type":"message_delta","delta":{},"usage":{"input_tokens":12,"cache_read_input_tokens":null,"output_tokens":9}})");
  relayed(relay, {start, later_input, stop});
  EXPECT_EQ(relay.usage(), (core::Tokens{12 + 3 + 5, 9}));
}

TEST(MessagesStreamRelay, AStreamWithoutMessageStopHasNoUsageAndSaysPending) {
  MessagesStreamRelay relay(false);
  const std::string out = relayed(relay, {start + text_delta + delta});
  EXPECT_FALSE(relay.done_seen());
  EXPECT_FALSE(relay.usage());
  EXPECT_NE(out.find(R"("usage_source":"pending"})"), std::string::npos) << out;
  EXPECT_EQ(out.find("message_stop"), std::string::npos);
}

TEST(MessagesStreamRelay, ACutStreamNeverGetsMessageStop) {
  MessagesStreamRelay relay(false);
  const std::string out = relayed(relay, {start, delta}, /*cut=*/true);
  EXPECT_NE(out.find(R"("usage_source":"pending"})"), std::string::npos) << out;
  EXPECT_EQ(out.find("message_stop"), std::string::npos);
  std::string after;
  relay.finish(after);
  EXPECT_TRUE(after.empty());
}

TEST(MessagesStreamRelay, InvalidCountsMakeTheUsageMissing) {
  MessagesStreamRelay relay(false);
  relayed(
      relay,
      {start, event("message_delta", R"({"type":"message_delta","usage":{"output_tokens":-3}})"),
       stop});
  EXPECT_TRUE(relay.done_seen());
  EXPECT_FALSE(relay.usage());
}

TEST(MessagesStreamRelay, ReadsEventsWithoutANameByTheirType) {
  MessagesStreamRelay relay(false);
  relayed(
      relay,
      {"data: " +
           std::string(
               R"({"type":"message_start","message":{"id":"msg_x","usage":{"input_tokens":2,"output_tokens":1}}})") +
           "\n\n",
       "data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":4}}\n\n",
       "data: {\"type\":\"message_stop\"}\n\n"});
  EXPECT_EQ(relay.provider_id(), "msg_x");
  EXPECT_EQ(relay.usage(), (core::Tokens{2, 4}));
}

TEST(MessagesStreamRelay, GivesTheSameBytesWhateverTheSplit) {
  MessagesStreamRelay whole(false);
  const std::string expected = relayed(whole, {whole_stream()});
  MessagesStreamRelay bytewise(false);
  std::vector<std::string> pieces;
  for (char c : whole_stream()) pieces.emplace_back(1, c);
  EXPECT_EQ(relayed(bytewise, pieces), expected);
  EXPECT_EQ(bytewise.usage(), whole.usage());
}

TEST(MessagesStreamRelay, PassesAnUnreadableMessageEventUntouched) {
  MessagesStreamRelay relay(false);
  const std::string broken = event("message_start", "{\"id\": not json");
  const std::string out = relayed(relay, {broken, text_delta});
  EXPECT_EQ(out, broken + text_delta);
  EXPECT_TRUE(relay.provider_id().empty());
}

TEST(MessagesStreamRelay, RelaysNothingAfterMessageStop) {
  MessagesStreamRelay relay(false);
  const std::string out = relayed(relay, {whole_stream() + ping});
  EXPECT_EQ(out.substr(out.size() - stop.size()), stop);
}

TEST(MessagesStreamRelay, RefusesToHoldMoreThanTheEventBound) {
  MessagesStreamRelay relay(false);
  std::string out;
  ASSERT_TRUE(relay.feed(start + delta, out));
  const std::string big =
      event("content_block_delta", "{\"t\":\"" + std::string(sse_event_bytes_max / 2, 'a') + "\"}");
  EXPECT_TRUE(relay.feed(big, out));
  EXPECT_FALSE(relay.feed(big, out));
}

TEST(MessagesStreamRelay, RebuildsAMultiLineDeltaAsOneDataLine) {
  MessagesStreamRelay relay(false);
  const std::string out =
      relayed(relay, {start,
                      "event: message_delta\ndata: {\"type\":\"message_delta\",\ndata: "
                      "\"usage\":{\"output_tokens\":2}}\n\n",
                      stop});
  const auto at = out.find("event: message_delta\ndata: ");
  ASSERT_NE(at, std::string::npos);
  const std::string line = out.substr(at + 27, out.find("\n\n", at) - at - 27);
  const auto v = bj::parse(line);
  EXPECT_EQ(v.at("usage_source").as_string(), "provider");
  EXPECT_EQ(relay.usage(), (core::Tokens{18, 2}));
}

}  // namespace
}  // namespace cairva::wire
