#include "wire/errors.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <utility>

namespace cairva::wire {
namespace {

namespace bj = boost::json;

TEST(ErrorBody, HasTypeCodeAndMessage) {
  EXPECT_EQ(
      error_body(ErrorCode::invalid_request, "max_tokens must be an integer >= 1"),
      R"({"error":{"type":"invalid_request","code":"invalid_request","message":"max_tokens must be an integer >= 1"}})");
}

TEST(ErrorBody, HasLimitOnlyForRateLimited) {
  const auto v = bj::parse(error_body(ErrorCode::rate_limited, "slow down", "max_concurrency"));
  EXPECT_EQ(v.at("error").at("limit").as_string(), "max_concurrency");
  EXPECT_EQ(v.at("error").at("code").as_string(), "rate_limited");
  const auto other =
      bj::parse(error_body(ErrorCode::allocation_exhausted, "no", "max_concurrency"));
  EXPECT_FALSE(other.at("error").as_object().contains("limit"));
}

TEST(ErrorBody, EscapesTheMessage) {
  const std::string message = "model \"a\\b\"\n\t\x01 é 😀";
  const auto v = bj::parse(error_body(ErrorCode::model_not_allowed, message));
  EXPECT_EQ(v.at("error").at("message").as_string(), message);
}

TEST(ErrorBody, ReplacesInvalidUtf8SoTheBodyStaysJson) {
  const std::string body =
      error_body(ErrorCode::invalid_request, "bad \xff\xc3 byte \xed\xa0\x80!");
  boost::system::error_code ec;
  const auto v = bj::parse(body, ec);
  ASSERT_FALSE(ec) << body;
  EXPECT_EQ(v.at("error").at("message").as_string(),
            "bad \xEF\xBF\xBD\xEF\xBF\xBD byte \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD!");
}

TEST(AnthropicErrorBody, IsAnthropicsShapeWithTheGatewaysCode) {
  EXPECT_EQ(
      anthropic_error_body(400, ErrorCode::unsupported_api, "use /v1/messages"),
      R"({"type":"error","error":{"type":"invalid_request_error","message":"use /v1/messages","code":"unsupported_api"}})");
}

TEST(AnthropicErrorBody, TypeFollowsTheStatusTheClientIsAnswered) {
  const std::pair<ErrorCode, std::string_view> cases[] = {
      {ErrorCode::invalid_request, "invalid_request_error"},
      {ErrorCode::model_not_allowed, "invalid_request_error"},
      {ErrorCode::invalid_api_key, "authentication_error"},
      {ErrorCode::allocation_exhausted, "billing_error"},
      {ErrorCode::allocation_depleted, "billing_error"},
      {ErrorCode::allocation_not_active, "permission_error"},
      {ErrorCode::allocation_expired, "permission_error"},
      {ErrorCode::not_found, "not_found_error"},
      {ErrorCode::request_too_large, "request_too_large"},
      {ErrorCode::rate_limited, "rate_limit_error"},
      {ErrorCode::internal_error, "api_error"},
      {ErrorCode::provider_unavailable, "api_error"},
      {ErrorCode::store_unavailable, "api_error"},
      {ErrorCode::provider_timeout, "timeout_error"},
      {ErrorCode::method_not_allowed, "invalid_request_error"},
      {ErrorCode::headers_too_large, "request_too_large"},
  };
  for (const auto& [code, type] : cases) {
    const auto v = bj::parse(anthropic_error_body(http_status(code), code, "m"));
    EXPECT_EQ(v.at("type").as_string(), "error");
    EXPECT_EQ(v.at("error").at("type").as_string(), type) << wire_name(code);
    EXPECT_EQ(v.at("error").at("code").as_string(), wire_name(code));
  }
  // A busy gateway: rate_limited answered 503 is the provider side's trouble, not the buyer's rate.
  EXPECT_EQ(bj::parse(anthropic_error_body(503, ErrorCode::rate_limited, "busy"))
                .at("error")
                .at("type")
                .as_string(),
            "api_error");
}

TEST(AnthropicErrorBody, NamesTheLimitOfARateLimitAndEscapesTheMessage) {
  const std::string message = "model \"a\"\n\xff";
  const auto v =
      bj::parse(anthropic_error_body(429, ErrorCode::rate_limited, message, "tokens_per_minute"));
  EXPECT_EQ(v.at("error").at("limit").as_string(), "tokens_per_minute");
  EXPECT_EQ(v.at("error").at("message").as_string(), "model \"a\"\n\xEF\xBF\xBD");
  EXPECT_FALSE(bj::parse(anthropic_error_body(402, ErrorCode::allocation_exhausted, "no", "x"))
                   .at("error")
                   .as_object()
                   .contains("limit"));
}

}  // namespace
}  // namespace cairva::wire
