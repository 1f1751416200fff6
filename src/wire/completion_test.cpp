#include "wire/completion.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <thread>

#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

const std::string completion =
    R"({"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],)"
    R"("usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}})";

TEST(ReadCompletion, ReadsIdAndUsage) {
  auto info = read_completion(completion);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, "chatcmpl-1");
  ASSERT_TRUE(info->usage);
  EXPECT_EQ(info->usage->input, 12);
  EXPECT_EQ(info->usage->output, 3);
}

TEST(ReadCompletion, UnescapesTheId) {
  auto info = read_completion(R"({"id":"a\"b\u00e9"})");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, "a\"b\xC3\xA9");
}

TEST(UsableProviderId, OnlyIdsEveryStoreCanKeepKeyABooking) {
  EXPECT_TRUE(usable_provider_id("chatcmpl-1"));
  EXPECT_TRUE(usable_provider_id(std::string(provider_id_bytes_max, 'x')));
  EXPECT_FALSE(usable_provider_id(""));
  EXPECT_FALSE(usable_provider_id(std::string(provider_id_bytes_max + 1, 'x')));
  EXPECT_FALSE(usable_provider_id(std::string("p-\0x", 4)));  // PostgreSQL would keep "p-"
  // An id with a NUL is read as sent; the gateway books it under its next id.
  auto info = read_completion(R"({"id":"p-\u0000x","choices":[]})");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, std::string("p-\0x", 4));
}

TEST(ReadCompletion, TreatsAbsentOrInvalidUsageAsMissing) {
  const std::vector<std::string> bodies = {
      R"({"id":"x"})",
      R"({"id":"x","usage":null})",
      R"({"id":"x","usage":[]})",
      R"({"id":"x","usage":{}})",
      R"({"id":"x","usage":{"prompt_tokens":1}})",
      R"({"id":"x","usage":{"completion_tokens":1}})",
      R"({"id":"x","usage":{"prompt_tokens":-1,"completion_tokens":1}})",
      R"({"id":"x","usage":{"prompt_tokens":1.5,"completion_tokens":1}})",
      R"({"id":"x","usage":{"prompt_tokens":"1","completion_tokens":1}})",
      R"({"id":"x","usage":{"prompt_tokens":1,"completion_tokens":1099511627777}})",
      R"({"id":"x","usage":{"prompt_tokens":1,"completion_tokens":18446744073709551615}})",
      R"({"id":"x","usage":{"prompt_tokens":1,"completion_tokens":99999999999999999999999}})",
      R"({"id":"x","usage":{"prompt_tokens":-99999999999999999999999,"completion_tokens":1}})",
      R"({"id":"x","usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens":3}})",
  };
  for (const auto& b : bodies) {
    auto info = read_completion(b);
    ASSERT_TRUE(info.ok()) << b;
    EXPECT_FALSE(info->usage) << b;
    EXPECT_EQ(info->id, "x");
  }
  auto at_bound =
      read_completion(R"({"usage":{"prompt_tokens":0,"completion_tokens":1099511627776}})");
  ASSERT_TRUE(at_bound.ok());
  ASSERT_TRUE(at_bound->usage);
  EXPECT_EQ(at_bound->usage->output, usage_tokens_max);
  EXPECT_EQ(at_bound->id, "");
}

TEST(ReadCompletion, RefusesMalformedBodies) {
  for (std::string_view b :
       {"", "nope", "[]", "5", "{", R"({"id":"x"} {})", R"({"id":"x"}])",
        R"({"id":"x","usage":{"prompt_tokens":1,,}})", R"({"id":"x","choices":[1,]})"}) {
    auto info = read_completion(b);
    ASSERT_FALSE(info.ok()) << b;
    EXPECT_EQ(info.error().code, ErrorCode::provider_unavailable);
  }
}

bj::value reparse(const std::string& s) {
  boost::system::error_code ec;
  bj::value v = bj::parse(s, ec);
  EXPECT_FALSE(ec) << "not valid JSON: " << s;
  return v;
}

TEST(WithUsageSource, AppendsProviderBeforeTheClosingBrace) {
  const std::string body = completion + "\n";
  const std::string out = with_usage_source(body, false);
  EXPECT_EQ(out, completion.substr(0, completion.size() - 1) + ",\"usage_source\":\"provider\"}\n");
  reparse(out);
}

TEST(WithUsageSource, PendingNullsAnExistingUsage) {
  const std::string body = R"({"id":"x","usage":{"prompt_tokens":"bad"} ,"choices":[]})";
  const std::string out = with_usage_source(body, true);
  EXPECT_EQ(out, R"({"id":"x","usage":null ,"choices":[],"usage_source":"pending"})");
  reparse(out);
}

TEST(WithUsageSource, PendingAddsUsageWhenAbsent) {
  EXPECT_EQ(with_usage_source(R"({"id":"x"})", true),
            R"({"id":"x","usage":null,"usage_source":"pending"})");
  EXPECT_EQ(with_usage_source(" { } ", true), R"( { "usage":null,"usage_source":"pending"} )");
  EXPECT_EQ(with_usage_source("{}", false), R"({"usage_source":"provider"})");
}

TEST(WithUsageSource, ReplacesAnExistingUsageSource) {
  EXPECT_EQ(with_usage_source(R"({"usage_source":"x","id":"y"})", false),
            R"({"usage_source":"provider","id":"y"})");
}

TEST(WithUsageSource, PendingReplacesAScalarUsage) {
  EXPECT_EQ(with_usage_source(R"({"usage":"lots" ,"id":"y"})", true),
            R"({"usage":null ,"id":"y","usage_source":"pending"})");
}

TEST(WithUsageSource, SplicesBodiesLargerThanTheRetainedScratch) {
  // Regression: offsets were taken from the scratch before it grew for the body.
  const std::string big = R"({"id":"x","pad":")" +
                          std::string(json_scratch_retained_bytes_max + 10, 'p') +
                          R"(","usage":{"prompt_tokens":1,"completion_tokens":2}})";
  auto info = read_completion(big);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->usage, (core::Tokens{1, 2}));
  const std::string pending = with_usage_source(big, true);
  EXPECT_TRUE(pending.ends_with(R"(","usage":null,"usage_source":"pending"})"));
  EXPECT_EQ(pending.size(), big.size() - 41 + 4 + 25);
}

TEST(WithUsageSource, LeavesAMalformedBodyAlone) {
  EXPECT_EQ(with_usage_source("{oops", false), "{oops");
}

}  // namespace
}  // namespace cairva::wire
