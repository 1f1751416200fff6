#include "wire/sse.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <thread>

#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

struct Parsed {
  std::vector<std::string> raw;
  std::vector<std::string> data;  // "<no data>" for data-less events
};

// Feeds `stream` in pieces cut at `cuts` and collects every event.
Parsed parse_in_pieces(std::string_view stream, std::vector<size_t> cuts) {
  SseParser parser;
  Parsed out;
  size_t at = 0;
  cuts.push_back(stream.size());
  for (size_t cut : cuts) {
    parser.push(stream.substr(at, cut - at));
    at = cut;
    for (;;) {
      auto next = parser.next();
      EXPECT_TRUE(next.ok());
      if (!next.ok() || !next->has_value()) break;
      out.raw.emplace_back((*next)->raw);
      out.data.emplace_back((*next)->has_data ? std::string((*next)->data) : "<no data>");
    }
  }
  return out;
}

const std::string mixed_stream =
    "data: {\"a\":1}\r\n\r\n"
    ": keep-alive\n\n"
    "event: ping\ndata:x\r\rdata: line1\ndata: line2\nid: 7\n\n"
    "\n\n"
    "data\n\n"
    "data: [DONE]\r\n\r\n"
    "data: incomplete";

TEST(SseParser, SplitsEventsOnEveryLineEnding) {
  const Parsed p = parse_in_pieces(mixed_stream, {});
  const std::vector<std::string> data = {"{\"a\":1}",    "<no data>", "x",
                                         "line1\nline2", "",          "[DONE]"};
  EXPECT_EQ(p.data, data);
  ASSERT_EQ(p.raw.size(), 6u);
  EXPECT_EQ(p.raw[0], "data: {\"a\":1}\r\n\r\n");
  EXPECT_EQ(p.raw[1], ": keep-alive\n\n");
  EXPECT_EQ(p.raw[2], "event: ping\ndata:x\r\r");
  EXPECT_EQ(p.raw[3], "data: line1\ndata: line2\nid: 7\n\n");
  EXPECT_EQ(p.raw[5], "data: [DONE]\r\n\r\n");
}

TEST(SseParser, GivesTheSameEventsWhateverTheSplit) {
  const Parsed whole = parse_in_pieces(mixed_stream, {});
  for (size_t i = 0; i <= mixed_stream.size(); ++i) {
    EXPECT_EQ(parse_in_pieces(mixed_stream, {i}).raw, whole.raw) << "split at " << i;
    EXPECT_EQ(parse_in_pieces(mixed_stream, {i}).data, whole.data) << "split at " << i;
  }
  std::vector<size_t> every_byte;
  for (size_t i = 1; i < mixed_stream.size(); ++i) every_byte.push_back(i);
  const Parsed bytewise = parse_in_pieces(mixed_stream, every_byte);
  EXPECT_EQ(bytewise.raw, whole.raw);
  EXPECT_EQ(bytewise.data, whole.data);
}

TEST(SseParser, NamesEachEventByItsEventField) {
  SseParser parser;
  parser.push("event: response.created\ndata: {}\n\ndata: {}\n\nevent:first\nevent: last\n: c\n\n");
  std::vector<std::string> names;
  for (;;) {
    auto next = parser.next();
    ASSERT_TRUE(next.ok());
    if (!next->has_value()) break;
    names.emplace_back((*next)->name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"response.created", "", "last"}));
}

TEST(SseParser, ReportsDoneOnlyForTheDoneEvent) {
  SseParser parser;
  parser.push("data: [DONE]\n\ndata: [DONE] \n\n");
  auto first = parser.next();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_TRUE((*first)->is_done());
  auto second = parser.next();
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_FALSE((*second)->is_done());
}

TEST(SseParser, RefusesAnEventOverTheBound) {
  SseParser parser;
  const std::string piece(64 << 10, 'a');
  parser.push("data: ");
  bool refused = false;
  for (size_t sent = 0; sent <= sse_event_bytes_max + piece.size() && !refused;
       sent += piece.size()) {
    parser.push(piece);
    auto next = parser.next();
    if (!next.ok())
      refused = true;
    else
      EXPECT_FALSE(next->has_value());
  }
  EXPECT_TRUE(refused);
}

TEST(SseParser, AcceptsAnEventJustUnderTheBound) {
  SseParser parser;
  const std::string data(sse_event_bytes_max - 8, 'a');
  parser.push("data: " + data + "\n\n");
  auto next = parser.next();
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->data.size(), data.size());
}

// ----- StreamRelay -----

const std::string role_chunk =
    R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant"}}],"usage":null})"
    "\n\n";
const std::string content_chunk =
    R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","usage":null,"choices":[{"index":0,"delta":{"content":"Hi"}}]})"
    "\n\n";
const std::string usage_chunk =
    R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13}})"
    "\n\n";
const std::string done = "data: [DONE]\n\n";

std::string relay_all(StreamRelay& relay, std::string_view stream, size_t piece_bytes = 0) {
  std::string out;
  if (piece_bytes == 0) piece_bytes = stream.size() + 1;
  for (size_t at = 0; at < stream.size(); at += piece_bytes) {
    EXPECT_TRUE(relay.feed(stream.substr(at, piece_bytes), out));
  }
  relay.finish(out);
  return out;
}

// Every data event of a relayed stream is valid JSON or [DONE].
void expect_valid_events(const std::string& out) {
  SseParser parser;
  parser.push(out);
  for (;;) {
    auto next = parser.next();
    ASSERT_TRUE(next.ok());
    if (!next->has_value()) break;
    if (!(*next)->has_data || (*next)->is_done()) continue;
    boost::system::error_code ec;
    bj::parse((*next)->data, ec);
    EXPECT_FALSE(ec) << (*next)->data;
  }
  EXPECT_EQ(parser.pending_bytes(), 0u);
}

TEST(StreamRelay, DropsUsageForAClientThatDidNotAsk) {
  StreamRelay relay(false);
  const std::string out = relay_all(relay, role_chunk + content_chunk + usage_chunk + done);
  EXPECT_EQ(
      out,
      R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant"}}]})"
      "\n\n"
      R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hi"}}]})"
      "\n\n" +
          done);
  EXPECT_EQ(relay.provider_id(), "chatcmpl-9");
  ASSERT_TRUE(relay.usage());
  EXPECT_EQ(*relay.usage(), (core::Tokens{11, 2}));
  EXPECT_TRUE(relay.done_seen());
  expect_valid_events(out);
}

TEST(StreamRelay, MarksTheUsageChunkForAClientThatAsked) {
  StreamRelay relay(true);
  const std::string out = relay_all(relay, role_chunk + content_chunk + usage_chunk + done);
  const std::string marked =
      usage_chunk.substr(0, usage_chunk.size() - 3) + ",\"usage_source\":\"provider\"}\n\n";
  EXPECT_EQ(out, role_chunk + content_chunk + marked + done);
  ASSERT_TRUE(relay.usage());
  EXPECT_EQ(relay.usage()->input, 11);
  expect_valid_events(out);
}

TEST(StreamRelay, AddsAPendingChunkWhenNoUsageCameAndTheClientAsked) {
  StreamRelay relay(true);
  const std::string out = relay_all(relay, role_chunk + content_chunk + done);
  EXPECT_EQ(
      out,
      role_chunk + content_chunk +
          R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","choices":[],"usage":null,"usage_source":"pending"})"
          "\n\n" +
          done);
  EXPECT_FALSE(relay.usage());
  expect_valid_events(out);
}

TEST(StreamRelay, EndsACutStreamWithPendingThenDone) {
  StreamRelay relay(true);
  const std::string cut = role_chunk + content_chunk.substr(0, 40);
  const std::string out = relay_all(relay, cut);
  EXPECT_FALSE(relay.done_seen());
  EXPECT_NE(out.find("\"usage_source\":\"pending\""), std::string::npos);
  EXPECT_TRUE(out.ends_with(done));
  expect_valid_events(out);
  StreamRelay quiet(false);
  EXPECT_EQ(
      relay_all(quiet, cut),
      R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant"}}]})"
      "\n\n" +
          done);
}

TEST(StreamRelay, PendingChunkWithoutAnyChunkStillValid) {
  StreamRelay relay(true);
  const std::string out = relay_all(relay, "");
  expect_valid_events(out);
  EXPECT_TRUE(out.ends_with(done));
  EXPECT_EQ(relay.provider_id(), "");
}

TEST(StreamRelay, SameOutputWhateverTheSplit) {
  const std::string stream = ": hello\r\n\r\n" + role_chunk + content_chunk + usage_chunk + done;
  for (bool wants : {false, true}) {
    StreamRelay whole_relay(wants);
    const std::string whole = relay_all(whole_relay, stream);
    for (size_t piece = 1; piece <= 64; ++piece) {
      StreamRelay relay(wants);
      EXPECT_EQ(relay_all(relay, stream, piece), whole) << "pieces of " << piece;
      EXPECT_EQ(relay.usage(), whole_relay.usage());
    }
    for (size_t i = 0; i <= stream.size(); ++i) {
      StreamRelay relay(wants);
      std::string out;
      EXPECT_TRUE(relay.feed(std::string_view(stream).substr(0, i), out));
      EXPECT_TRUE(relay.feed(std::string_view(stream).substr(i), out));
      relay.finish(out);
      EXPECT_EQ(out, whole) << "split at " << i;
    }
  }
}

TEST(StreamRelay, RemovesUsageNullWhereverItSits) {
  StreamRelay relay(false);
  const std::string out = relay_all(relay,
                                    "data: {\"usage\" : null , \"choices\":[{}]}\n\n"
                                    "data: {\"choices\":[{}] ,\t \"usage\":null}\n\n"
                                    "data: {\"usage\":null}\n\n");
  EXPECT_EQ(out,
            "data: { \"choices\":[{}]}\n\n"
            "data: {\"choices\":[{}] }\n\n"
            "data: {}\n\n" +
                done);
  expect_valid_events(out);
}

TEST(StreamRelay, KeepsUsageOnAChunkWithChoicesButRemovesItForAClientThatDidNotAsk) {
  const std::string chunk =
      "data: "
      "{\"id\":\"c\",\"choices\":[{\"delta\":{}}],\"usage\":{\"prompt_tokens\":1,\"completion_"
      "tokens\":2}}\n\n";
  StreamRelay quiet(false);
  EXPECT_EQ(relay_all(quiet, chunk + done),
            "data: {\"id\":\"c\",\"choices\":[{\"delta\":{}}]}\n\n" + done);
  EXPECT_EQ(quiet.usage(), (core::Tokens{1, 2}));
  StreamRelay asking(true);
  EXPECT_EQ(relay_all(asking, chunk + done),
            "data: "
            "{\"id\":\"c\",\"choices\":[{\"delta\":{}}],\"usage\":{\"prompt_tokens\":1,"
            "\"completion_tokens\":2},\"usage_source\":\"provider\"}\n\n" +
                done);
}

TEST(StreamRelay, RemovesAScalarUsageForAClientThatDidNotAsk) {
  StreamRelay relay(false);
  EXPECT_EQ(relay_all(relay, "data: {\"usage\":\"x\" , \"choices\":[1]}\n\n"),
            "data: { \"choices\":[1]}\n\n" + done);
}

TEST(StreamRelay, RemovesUsageOnAFreshThread) {
  // Regression: offsets were taken from the thread's scratch before its first growth.
  std::string out;
  std::thread([&] {
    StreamRelay relay(false);
    out = relay_all(relay, content_chunk);
  }).join();
  EXPECT_EQ(
      out,
      R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hi"}}]})"
      "\n\n" +
          done);
}

TEST(StreamRelay, PassesThroughWhatItCannotRead) {
  StreamRelay relay(false);
  const std::string odd = "data: not json\n\ndata: {\"usage\":null} trailing\n\nevent: x\n\n";
  EXPECT_EQ(relay_all(relay, odd), odd + done);
}

TEST(StreamRelay, RebuildsMultiLineDataAsOneLine) {
  StreamRelay relay(false);
  const std::string out = relay_all(relay, "data: {\"choices\":[1],\ndata: \"usage\":null}\n\n");
  EXPECT_EQ(out, "data: {\"choices\":[1]}\n\n" + done);
}

TEST(StreamRelay, IgnoresEverythingAfterDoneAndFinishesOnce) {
  StreamRelay relay(true);
  std::string out;
  EXPECT_TRUE(relay.feed(usage_chunk + done + content_chunk, out));
  relay.finish(out);
  relay.finish(out);
  EXPECT_TRUE(relay.feed(content_chunk, out));
  const std::string marked =
      usage_chunk.substr(0, usage_chunk.size() - 3) + ",\"usage_source\":\"provider\"}\n\n";
  EXPECT_EQ(out, marked + done);
}

TEST(StreamRelay, KeepsTheFirstUsageOnly) {
  StreamRelay relay(false);
  relay_all(
      relay,
      usage_chunk +
          "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":99,\"completion_tokens\":99}}\n\n" +
          done);
  EXPECT_EQ(relay.usage(), (core::Tokens{11, 2}));
}

TEST(StreamRelay, InvalidUsageCountsAsMissing) {
  StreamRelay relay(true);
  const std::string bad =
      "data: "
      "{\"id\":\"q\",\"choices\":[],\"usage\":{\"prompt_tokens\":-1,\"completion_tokens\":2}}\n\n";
  const std::string out = relay_all(relay, bad + done);
  EXPECT_FALSE(relay.usage());
  EXPECT_TRUE(out.starts_with(bad));
  EXPECT_NE(out.find("\"usage_source\":\"pending\""), std::string::npos);
}

TEST(StreamRelay, FailsOnAnEventOverTheBound) {
  StreamRelay relay(false);
  std::string out;
  const std::string big = "data: \"" + std::string(sse_event_bytes_max, 'a');
  EXPECT_FALSE(relay.feed(big, out));
}

}  // namespace
}  // namespace cairva::wire
