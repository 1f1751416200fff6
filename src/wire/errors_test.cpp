#include "wire/errors.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace cairva::wire {
namespace {

namespace bj = boost::json;

TEST(ErrorBody, HasTypeCodeAndMessage) {
  EXPECT_EQ(error_body(ErrorCode::invalid_request, "max_tokens must be an integer >= 1"),
            R"({"error":{"type":"invalid_request","code":"invalid_request","message":"max_tokens must be an integer >= 1"}})");
}

TEST(ErrorBody, HasLimitOnlyForRateLimited) {
  const auto v = bj::parse(error_body(ErrorCode::rate_limited, "slow down", "max_concurrency"));
  EXPECT_EQ(v.at("error").at("limit").as_string(), "max_concurrency");
  EXPECT_EQ(v.at("error").at("code").as_string(), "rate_limited");
  const auto other = bj::parse(error_body(ErrorCode::allocation_exhausted, "no", "max_concurrency"));
  EXPECT_FALSE(other.at("error").as_object().contains("limit"));
}

TEST(ErrorBody, EscapesTheMessage) {
  const std::string message = "model \"a\\b\"\n\t\x01 é 😀";
  const auto v = bj::parse(error_body(ErrorCode::model_not_allowed, message));
  EXPECT_EQ(v.at("error").at("message").as_string(), message);
}

TEST(ErrorBody, ReplacesInvalidUtf8SoTheBodyStaysJson) {
  const std::string body = error_body(ErrorCode::invalid_request, "bad \xff\xc3 byte \xed\xa0\x80!");
  boost::system::error_code ec;
  const auto v = bj::parse(body, ec);
  ASSERT_FALSE(ec) << body;
  EXPECT_EQ(v.at("error").at("message").as_string(),
            "bad \xEF\xBF\xBD\xEF\xBF\xBD byte \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD!");
}

}  // namespace
}  // namespace cairva::wire
