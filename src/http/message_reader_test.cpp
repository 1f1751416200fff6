#include "http/message_reader.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

namespace cairva::http {
namespace {

namespace bhttp = boost::beast::http;
using boost::system::error_code;

// Feeds `text` to the parser in pieces of `step` bytes, as reads would deliver it; stops at
// the first error. Returns the bytes consumed.
template <class Parser>
size_t feed(Parser& p, std::string_view text, size_t step, error_code& ec) {
  p.eager(true);
  size_t at = 0;
  std::string pending;
  while (at < text.size() && !p.is_done()) {
    pending.append(text.substr(at, step));
    at += std::min(step, text.size() - at);
    const size_t used = p.put(boost::asio::buffer(pending), ec);
    pending.erase(0, used);
    if (ec == bhttp::error::need_more) ec = {};
    if (ec) return at - pending.size();
  }
  return at - pending.size();
}

TEST(RequestReader, KeepsTheStartLineTheFirstAuthorizationAndTheBody) {
  std::string text;
  RequestReader r(text);
  error_code ec;
  const std::string msg =
      "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nauthorization: Bearer cv_one\r\n"
      "Authorization: Bearer cv_two\r\nContent-Length: 5\r\n\r\nhello";
  EXPECT_EQ(feed(r, msg, 7, ec), msg.size());
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(r.is_done());
  EXPECT_EQ(r.method(), bhttp::verb::post);
  EXPECT_EQ(r.method_text(), "POST");
  EXPECT_EQ(r.target(), "/v1/chat/completions?x=1");
  EXPECT_EQ(r.version(), 11u);
  EXPECT_EQ(r.authorization(), "Bearer cv_one");
  EXPECT_EQ(r.body(), "hello");
  EXPECT_TRUE(r.keep_alive());
}

TEST(RequestReader, KeepsTheFirstXApiKeyAndAnthropicFields) {
  std::string text;
  RequestReader r(text);
  error_code ec;
  const std::string msg =
      "POST /v1/messages HTTP/1.1\r\nX-Api-Key: cv_one\r\nx-api-key: cv_two\r\nAnthropic-Version: "
      "2023-06-01\r\n"
      "anthropic-beta: a,b\r\nanthropic-beta: c\r\nContent-Length: 2\r\n\r\n{}";
  EXPECT_EQ(feed(r, msg, 5, ec), msg.size());
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(r.x_api_key(), "cv_one");
  EXPECT_EQ(r.anthropic_version(), "2023-06-01");
  EXPECT_EQ(r.anthropic_beta(), "a,b, c") << "every anthropic-beta line, one list";
  EXPECT_EQ(r.authorization(), "");
  EXPECT_EQ(r.target(), "/v1/messages");
  EXPECT_EQ(r.body(), "{}");
}

// Every anthropic-beta line reaches the provider, also when other kept fields come between
// them (the joined list stays one run of the reader's text).
TEST(RequestReader, JoinsEveryAnthropicBetaLineAroundOtherKeptFields) {
  std::string text;
  RequestReader r(text);
  error_code ec;
  const std::string msg =
      "POST /v1/messages HTTP/1.1\r\nanthropic-beta: one\r\nx-api-key: cv_k\r\nAnthropic-Beta: "
      "two, three\r\n"
      "Authorization: Bearer cv_b\r\nanthropic-beta: four\r\nanthropic-version: "
      "v\r\nContent-Length: 0\r\n\r\n";
  EXPECT_EQ(feed(r, msg, 7, ec), msg.size());
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(r.anthropic_beta(), "one, two, three, four");
  EXPECT_EQ(r.x_api_key(), "cv_k");
  EXPECT_EQ(r.authorization(), "Bearer cv_b");
  EXPECT_EQ(r.anthropic_version(), "v");
}

TEST(RequestReader, ReadsAChunkedBodyAndHttp10WithoutKeepAlive) {
  std::string text;
  RequestReader r(text);
  error_code ec;
  const std::string msg =
      "POST /v1/chat/completions HTTP/1.0\r\nTransfer-Encoding: "
      "chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  feed(r, msg, 3, ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(r.is_done());
  EXPECT_EQ(r.body(), "abcde");
  EXPECT_EQ(r.version(), 10u);
  EXPECT_FALSE(r.keep_alive());
  EXPECT_EQ(r.authorization(), "");
}

TEST(RequestReader, AConnectionsNextRequestReusesTheTextWithNothingOfTheLastOne) {
  std::string text;
  {
    RequestReader first(text);
    error_code ec;
    feed(first,
         "GET /v1/allocations/current HTTP/1.1\r\nAuthorization: Bearer "
         "cv_a_long_key_0123456789\r\n\r\n",
         64, ec);
    ASSERT_FALSE(ec);
    EXPECT_EQ(first.authorization(), "Bearer cv_a_long_key_0123456789");
  }
  const size_t capacity = text.capacity();
  RequestReader second(text);
  error_code ec;
  feed(second, "GET /healthz HTTP/1.1\r\n\r\n", 64, ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(second.target(), "/healthz");
  EXPECT_EQ(second.authorization(), "");
  EXPECT_EQ(text.capacity(), capacity);
}

TEST(RequestReader, ABodyLimitSetAfterTheHeaderStopsALargerChunkedBody) {
  std::string text;
  RequestReader r(text);
  r.body_limit(boost::none);
  error_code ec;
  const std::string head =
      "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string body = "8\r\n12345678\r\n0\r\n\r\n";
  r.eager(false);
  const size_t used = r.put(boost::asio::buffer(head), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_EQ(used, head.size());
  ASSERT_TRUE(r.is_header_done());
  r.body_limit(4);
  feed(r, body, body.size(), ec);
  EXPECT_EQ(ec, bhttp::error::body_limit);
  EXPECT_FALSE(r.is_done());
}

TEST(RequestReader, MalformedInputIsAnErrorNotAnAbort) {
  for (const std::string bad :
       {"POST /x HTTP/1.1\r\nContent-Length: x\r\n\r\n", "GARBAGE\r\n\r\n",
        "POST /x HTTP/2.0\r\n\r\n", "POST /x HTTP/1.1\r\nA\x01: b\r\n\r\n"}) {
    std::string text;
    RequestReader r(text);
    error_code ec;
    feed(r, bad, 4, ec);
    EXPECT_TRUE(ec) << bad;
  }
}

TEST(ResponseReader, KeepsStatusAndTheNamedFieldsWhateverTheirCase) {
  ResponseReader r;
  error_code ec;
  const std::string msg =
      "HTTP/1.1 429 Too Many Requests\r\nX-Request-ID: prov-1\r\nx-request-id: prov-2\r\n"
      "Request-Id: req_anthropic\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  feed(r, msg, 5, ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(r.is_done());
  EXPECT_EQ(r.status(), 429u);
  EXPECT_TRUE(r.has_field(ResponseReader::request_id_field));
  EXPECT_EQ(r.field(ResponseReader::request_id_field), "prov-1");
  EXPECT_FALSE(r.has_field(1));
  EXPECT_EQ(r.field(1), "");
  EXPECT_EQ(r.field(3), "req_anthropic");  // Anthropic's request-id, apart from x-request-id
  EXPECT_EQ(r.body(), "{}");
  EXPECT_TRUE(r.keep_alive());
}

TEST(ResponseReader, AHugeAnnouncedLengthIsNotReservedUpFront) {
  ResponseReader r;
  r.body_limit(boost::none);  // as the gateway reads a provider's header
  error_code ec;
  feed(r, "HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n{\"id\":", 64, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(r.body(), "{\"id\":");
  EXPECT_LT(r.body().capacity(), response_reserve_bytes_max);
}

TEST(ResponseReader, AHeldStreamStopsWhenFullAndGoesOnOnceDrained) {
  ResponseReader r;
  r.hold_at_most(4);
  error_code ec;
  const std::string msg =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
      "chunked\r\n\r\na\r\n0123456789\r\n3\r\nabc\r\n0\r\n\r\n";
  std::string pending = msg;
  std::string seen;
  r.eager(true);
  for (int rounds = 0; !r.is_done() && rounds < 100; ++rounds) {
    const size_t used = r.put(boost::asio::buffer(pending), ec);
    pending.erase(0, used);
    if (ec == bhttp::error::need_buffer) ec = {};
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_LE(r.body().size(), 4u);
    seen += r.body();
    r.body().clear();
  }
  EXPECT_TRUE(r.is_done());
  EXPECT_EQ(seen, "0123456789abc");
}

TEST(RequestReader, RefusesATransferEncodingWhoseCodingsAreNotChunkedAlone) {
  for (const char* te :
       {"gzip", "identity", "xchunked", "chunked, gzip", "gzip, chunked", "chunked;x=1, gzip", "",
        "chunked\r\nTransfer-Encoding: gzip", "gzip\r\nTransfer-Encoding: chunked"}) {
    std::string text;
    RequestReader r(text);
    error_code ec;
    feed(r,
         std::string("POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: ") + te +
             "\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n",
         11, ec);
    EXPECT_EQ(ec, bhttp::error::bad_transfer_encoding) << te << ": " << ec.message();
  }
  for (const char* te : {"chunked", "Chunked", " chunked "}) {
    std::string text;
    RequestReader r(text);
    error_code ec;
    feed(r,
         std::string("POST / HTTP/1.1\r\nTransfer-Encoding: ") + te + "\r\n\r\n1\r\na\r\n0\r\n\r\n",
         5, ec);
    EXPECT_FALSE(ec) << te << ": " << ec.message();
    EXPECT_EQ(r.body(), "a");
  }
}

TEST(OnlyChunkedCoding, AcceptsChunkedAloneOnly) {
  EXPECT_TRUE(only_chunked_coding("chunked"));
  EXPECT_TRUE(only_chunked_coding("CHUNKED"));
  EXPECT_FALSE(only_chunked_coding(""));
  EXPECT_FALSE(only_chunked_coding("gzip, chunked"));
  EXPECT_FALSE(only_chunked_coding("chunked, identity"));
  EXPECT_FALSE(only_chunked_coding("chunkedx"));
  EXPECT_FALSE(only_chunked_coding("chunked;q=1"));
  EXPECT_TRUE(only_chunked_coding(" , chunked ,"));
}

TEST(RequestReader, SeesExpect100Continue) {
  std::string text;
  RequestReader r(text);
  error_code ec;
  r.eager(false);
  feed(r, "POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", 64, ec);
  ASSERT_FALSE(ec);
  EXPECT_TRUE(r.expects_continue());
  std::string text2;
  RequestReader plain(text2);
  feed(plain, "GET / HTTP/1.1\r\n\r\n", 64, ec);
  EXPECT_FALSE(plain.expects_continue());
}

TEST(RequestReader, AChunkedBodyTakesItsRoomFromTheBodyBudgetAndStopsWhenItRunsOut) {
  BodyBudget budget(64);
  std::string text;
  {
    RequestReader r(text);
    BodyLease lease(&budget);
    r.body_lease(&lease);
    error_code ec;
    const std::string forty(40, 'y');  // past the string's inline room: a real allocation
    feed(r, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n" + forty + "\r\n0\r\n\r\n",
         8, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(r.body(), forty);
    EXPECT_GE(lease.bytes(), r.body().capacity()) << "the room was taken before it was allocated";
    EXPECT_LE(lease.bytes(), 64u);
  }
  EXPECT_EQ(budget.used(), 0u);
  RequestReader big(text);
  BodyLease lease(&budget);
  big.body_lease(&lease);
  error_code ec;
  const std::string chunk(100, 'x');
  feed(big, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n" + chunk + "\r\n0\r\n\r\n",
       16, ec);
  EXPECT_EQ(ec, body_budget_exhausted);
  EXPECT_LE(budget.used(), 64u);
  EXPECT_LE(big.body().size(), 64u);
}

}  // namespace
}  // namespace cairva::http
