#include "wire/models.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

namespace cairva::wire {
namespace {

namespace bj = boost::json;

const std::vector<std::string> models = {"gpt-4o", "gpt-4o-mini \"quoted\""};

TEST(ModelList, OpenAIShape) {
  const auto v = bj::parse(openai_model_list(models, 1767225600, "openai-main"));
  EXPECT_EQ(
      v,
      bj::parse(
          R"({"object":"list","data":[)"
          R"({"id":"gpt-4o","object":"model","created":1767225600,"owned_by":"openai-main"},)"
          R"({"id":"gpt-4o-mini \"quoted\"","object":"model","created":1767225600,"owned_by":"openai-main"}]})"));
}

TEST(ModelList, AnthropicShape) {
  const auto v = bj::parse(anthropic_model_list(models, "2026-01-01T00:00:00Z"));
  EXPECT_EQ(
      v,
      bj::parse(
          R"({"data":[)"
          R"({"type":"model","id":"gpt-4o","display_name":"gpt-4o","created_at":"2026-01-01T00:00:00Z"},)"
          R"({"type":"model","id":"gpt-4o-mini \"quoted\"","display_name":"gpt-4o-mini \"quoted\"",)"
          R"("created_at":"2026-01-01T00:00:00Z"}],)"
          R"("has_more":false,"first_id":"gpt-4o","last_id":"gpt-4o-mini \"quoted\""})"));
}

}  // namespace
}  // namespace cairva::wire
