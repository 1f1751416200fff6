#include "http/message_head.h"

#include <gtest/gtest.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace cairva::http {
namespace {

namespace bhttp = boost::beast::http;

// Parses `text` with Beast: the head must be what an HTTP parser reads back.
template <bool isRequest>
bhttp::message<isRequest, bhttp::string_body> parse(const std::string& text) {
  bhttp::parser<isRequest, bhttp::string_body> p;
  p.eager(true);
  boost::system::error_code ec;
  p.put(boost::asio::buffer(text), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(p.is_done());
  return p.release();
}

TEST(MessageHead, AResponseParsesBackWithItsFieldsAndBody) {
  auto h = MessageHead::response(429, 11);
  h.add("x-cairva-request-id", "req_1");
  h.add("x-ratelimit-remaining-requests", int64_t{0});
  h.add("Retry-After", int64_t{7});
  const std::string body = R"({"error":{}})";
  const auto res = parse<false>(h.finish(body.size(), true) + body);
  EXPECT_EQ(res.result_int(), 429u);
  EXPECT_EQ(res.reason(), "Too Many Requests");
  EXPECT_EQ(res.version(), 11u);
  EXPECT_EQ(res["x-cairva-request-id"], "req_1");
  EXPECT_EQ(res["x-ratelimit-remaining-requests"], "0");
  EXPECT_EQ(res[bhttp::field::retry_after], "7");
  EXPECT_EQ(res.body(), body);
  EXPECT_TRUE(res.keep_alive());
}

TEST(MessageHead, ConnectionFollowsTheVersionsDefault) {
  EXPECT_FALSE(parse<false>(MessageHead::response(200, 11).finish(0, false)).keep_alive());
  EXPECT_TRUE(parse<false>(MessageHead::response(200, 10).finish(0, true)).keep_alive());
  EXPECT_FALSE(parse<false>(MessageHead::response(200, 10).finish(0, false)).keep_alive());
  EXPECT_EQ(MessageHead::response(200, 11).finish(0, true).find("Connection"), std::string::npos);
}

// A client may send any "HTTP/d.d": the answer is HTTP/1.1, or 1.0 to 1.0 and older.
TEST(MessageHead, AnyRequestVersionGetsA11Or10StatusLine) {
  for (const unsigned v : {0u, 9u, 10u, 11u, 12u, 20u, 99u}) {
    const std::string text = MessageHead::response(200, v).finish(0, true);
    EXPECT_EQ(text.substr(0, 9), v >= 11 ? "HTTP/1.1 " : "HTTP/1.0 ") << v;
    EXPECT_TRUE(parse<false>(text).keep_alive()) << v;
  }
}

TEST(MessageHead, AChunkedResponseReadsAsChunked) {
  auto h = MessageHead::response(200, 11);
  h.add("Content-Type", "text/event-stream");
  const auto res = parse<false>(h.finish_chunked(true) + "5\r\ndata:\r\n0\r\n\r\n");
  EXPECT_TRUE(res.chunked());
  EXPECT_EQ(res.body(), "data:");
}

TEST(MessageHead, ARequestParsesBack) {
  auto h = MessageHead::request("POST", "/v1/chat/completions");
  h.add("Host", "api.example.com:8443");
  const std::string body = R"({"model":"m"})";
  const auto req = parse<true>(h.finish(body.size(), true) + body);
  EXPECT_EQ(req.method(), bhttp::verb::post);
  EXPECT_EQ(req.target(), "/v1/chat/completions");
  EXPECT_EQ(req[bhttp::field::host], "api.example.com:8443");
  EXPECT_EQ(req.body(), body);
}

TEST(MessageHead, AValueThatWouldSplitTheHeadIsLeftOut) {
  auto h = MessageHead::response(200, 11);
  h.add("x-request-id", "a\r\nSet-Cookie: evil=1");
  h.add("x-ok", "fine");
  const auto res = parse<false>(h.finish(0, true));
  EXPECT_EQ(res.count(bhttp::field::set_cookie), 0u);
  EXPECT_EQ(res.count("x-request-id"), 0u);
  EXPECT_EQ(res["x-ok"], "fine");
}

TEST(MessageHead, FormattedFieldsFollowInOrderAndParseBack) {
  auto h = MessageHead::response(200, 11);
  h.add("x-cairva-request-id", "req_1");
  const Decimal limit(60), remaining(0), negative(-9223372036854775807LL - 1);
  h.add_formatted({{"x-limit", limit.view()},
                   {"x-remaining", remaining.view()},
                   {"x-empty", ""},
                   {"x-lowest", negative.view()}});
  const std::string text = h.finish(0, true);
  EXPECT_NE(
      text.find("\r\nx-cairva-request-id: req_1\r\nx-limit: 60\r\nx-remaining: 0\r\nx-empty: \r\n"
                "x-lowest: -9223372036854775808\r\n"),
      std::string::npos)
      << text;
  const auto res = parse<false>(text);
  EXPECT_EQ(res["x-limit"], "60");
  EXPECT_EQ(res["x-lowest"], "-9223372036854775808");
}

}  // namespace
}  // namespace cairva::http
