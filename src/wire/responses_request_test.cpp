#include "wire/responses_request.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "core/estimate.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

ResponsesRequest inspect_ok(std::string_view body) {
  auto r = inspect_responses_request(body);
  EXPECT_TRUE(r.ok()) << body << " -> " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : ResponsesRequest{};
}

std::string inspect_error(std::string_view body) {
  auto r = inspect_responses_request(body);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return {};
  EXPECT_EQ(r.error().code, ErrorCode::invalid_request);
  return r.error().message;
}

TEST(InspectResponsesRequest, ReadsEveryMemberItReadsByName) {
  const std::string body =
      R"({"model":"gpt-x","input":[{"role":"user","content":"abc"},{"type":"item_reference","id":"i1"}],)"
      R"("stream":true,"max_output_tokens":300,"service_tier":"flex","background":false,"store":true})";
  const ResponsesRequest r = inspect_ok(body);
  EXPECT_EQ(r.model, "gpt-x");
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.max_output_tokens, 300);
  EXPECT_EQ(r.service_tier, "flex");
  EXPECT_EQ(r.prompt.items, 2);
  ASSERT_TRUE(r.max_output_tokens_value);
  EXPECT_EQ(body.substr(r.max_output_tokens_value->offset, r.max_output_tokens_value->size), "300");
  EXPECT_EQ(r.object_open, 0u);
}

TEST(InspectResponsesRequest, AStringInputIsOneItem) {
  const ResponsesRequest r = inspect_ok(R"({"model":"m","input":"Write a haiku about ledgers."})");
  EXPECT_EQ(r.prompt.items, 1);
  EXPECT_EQ(r.prompt.chars, 5 + 5 + 28);  // "model", "input" and the text; not "m"
  EXPECT_EQ(core::input_estimate(r.prompt), 25);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.max_output_tokens);
  EXPECT_FALSE(r.max_output_tokens_value);
}

TEST(InspectResponsesRequest, InputIsOptionalAndNullIsAbsent) {
  EXPECT_EQ(inspect_ok(R"({"model":"m","previous_response_id":"resp_1"})").prompt.items, 0);
  const ResponsesRequest r =
      inspect_ok(R"({"model":"m","input":null,"max_output_tokens":null,"stream":null})");
  EXPECT_EQ(r.prompt.items, 0);
  EXPECT_FALSE(r.max_output_tokens);
  ASSERT_TRUE(r.max_output_tokens_value);  // present: the rewrite replaces the null
}

TEST(InspectResponsesRequest, MediaPartsCountAtTheirFixedEstimate) {
  const ResponsesRequest r = inspect_ok(
      R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"},)"
      R"({"type":"input_file","file_data":"JVBERi0x"}]}]})");
  EXPECT_EQ(r.prompt.media, 2);
}

TEST(InspectResponsesRequest, RefusesBackgroundResponses) {
  EXPECT_EQ(inspect_error(R"({"model":"m","input":"x","background":true})"),
            "background responses are not supported");
  EXPECT_EQ(inspect_error(R"({"model":"m","background":"yes"})"), "background must be a boolean");
}

TEST(InspectResponsesRequest, RefusesIllTypedMembers) {
  EXPECT_EQ(inspect_error(R"({"input":"x"})"), "model is required");
  EXPECT_EQ(inspect_error(R"({"model":5})"), "model must be a string");
  EXPECT_EQ(inspect_error(R"({"model":"m","input":5})"),
            "input must be a string or an array of input items");
  EXPECT_EQ(inspect_error(R"({"model":"m","max_output_tokens":0})"),
            "max_output_tokens must be an integer >= 1");
  EXPECT_EQ(inspect_error(R"({"model":"m","max_output_tokens":1.5})"),
            "max_output_tokens must be an integer >= 1");
  EXPECT_EQ(inspect_error(R"({"model":"m","stream":1})"), "stream must be a boolean");
  EXPECT_EQ(inspect_error(R"({"model":"m","service_tier":1})"), "service_tier must be a string");
  EXPECT_EQ(inspect_error(R"({"model":"m","max_output_tokens":5,"max_output_tokens":6})"),
            "member \"max_output_tokens\" appears more than once");
  EXPECT_EQ(inspect_error(R"([1])"), "request body must be a JSON object");
  EXPECT_NE(inspect_error(R"({"model":"m","input":"x"} {})").find("unexpected bytes"),
            std::string::npos);
  EXPECT_NE(inspect_error(R"({"model":"m","input":["x",)").find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(inspect_error(R"({"model":"m","tools":[{"a":tru}]})").find("not valid JSON"),
            std::string::npos);
}

int64_t limit_in(const std::string& body) {
  return bj::parse(body).as_object().at("max_output_tokens").as_int64();
}

TEST(RewriteResponsesRequest, WritesTheHeldLimitWhereverTheClientLeftIt) {
  const std::string absent = R"({"model":"m","input":"x"})";
  auto r = inspect_ok(absent);
  ASSERT_TRUE(responses_rewrite_needed(r, 1024));
  EXPECT_EQ(rewrite_responses_request(absent, r, 1024),
            R"({"max_output_tokens":1024,"model":"m","input":"x"})");

  const std::string lowered = R"({"model":"m","input":"x","max_output_tokens":5000,"store":false})";
  r = inspect_ok(lowered);
  ASSERT_TRUE(responses_rewrite_needed(r, 256));
  EXPECT_EQ(rewrite_responses_request(lowered, r, 256),
            R"({"model":"m","input":"x","max_output_tokens":256,"store":false})");

  const std::string null_limit = R"( {"model":"m","max_output_tokens":null})";
  r = inspect_ok(null_limit);
  ASSERT_TRUE(responses_rewrite_needed(r, 40));
  EXPECT_EQ(limit_in(rewrite_responses_request(null_limit, r, 40)), 40);

  const std::string same = R"({"model":"m","max_output_tokens":300})";
  r = inspect_ok(same);
  EXPECT_FALSE(responses_rewrite_needed(r, 300));
  EXPECT_EQ(rewrite_responses_request(same, r, 300), same);
}

}  // namespace
}  // namespace cairva::wire
