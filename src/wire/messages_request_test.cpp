#include "wire/messages_request.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "core/estimate.h"
#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

MessagesRequest inspect_ok(std::string_view body, MessagesCall call = MessagesCall::create) {
  auto r = inspect_messages_request(body, call);
  EXPECT_TRUE(r.ok()) << body << " -> " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : MessagesRequest{};
}

std::string inspect_error(std::string_view body, MessagesCall call = MessagesCall::create) {
  auto r = inspect_messages_request(body, call);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return {};
  EXPECT_EQ(r.error().code, ErrorCode::invalid_request);
  return r.error().message;
}

std::string body_with(std::string_view members) {
  return std::string(R"({"model":"claude-x","messages":[{"role":"user","content":"hi"}])") +
         (members.empty() ? "" : ",") + std::string(members) + "}";
}

int64_t sent_member(const std::string& body, std::string_view path) {
  const bj::value v = bj::parse(body);
  if (path == "max_tokens") return v.at("max_tokens").as_int64();
  return v.at("thinking").at("budget_tokens").as_int64();
}

TEST(InspectMessagesRequest, ReadsEveryMemberItCares) {
  const auto r = inspect_ok(
      R"({"model":"claude-x","max_tokens":4096,"stream":true,"service_tier":"auto",)"
      R"("thinking":{"type":"enabled","budget_tokens":2048},)"
      R"("messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]})");
  EXPECT_EQ(r.model, "claude-x");
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.max_tokens, 4096);
  EXPECT_EQ(r.thinking_budget, 2048);
  EXPECT_EQ(r.service_tier, "auto");
  EXPECT_EQ(r.prompt.items, 2);
}

TEST(InspectMessagesRequest, CountsEveryKeyAndStringButTheModelAndMediaPayloads) {
  // Keys: model(5) max_tokens(10) system(6) thinking(8) type(4) budget_tokens(13) messages(8)
  // role(4) content(7) type(4) source(6) type(4) data(4) = 83; strings: "terse"(5) "enabled"(7)
  // "user"(4) "image"(5) "base64"(6) = 27; the model's value and the image data do not count.
  const auto r = inspect_ok(
      R"({"model":"claude-x","max_tokens":10,"system":"terse","thinking":{"type":"enabled","budget_tokens":1024},)"
      R"("messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"QUJD"}}]}]})");
  EXPECT_EQ(r.prompt.chars, 83 + 27);
  EXPECT_EQ(r.prompt.media, 1);
  EXPECT_EQ(r.prompt.items, 1);
}

TEST(InspectMessagesRequest, MaxTokensIsRequiredToCreateButNotToCountTokens) {
  EXPECT_EQ(inspect_error(body_with("")), "max_tokens is required");
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":null)")), "max_tokens is required");
  const auto counted = inspect_ok(body_with(""), MessagesCall::count_tokens);
  EXPECT_EQ(counted.model, "claude-x");
  EXPECT_FALSE(counted.max_tokens);
}

TEST(InspectMessagesRequest, RefusesIllTypedMembersNamingThem) {
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":0)")), "max_tokens must be an integer >= 1");
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":"5")")), "max_tokens must be an integer >= 1");
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":1.5)")), "max_tokens must be an integer >= 1");
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":18446744073709551615)")),
            "max_tokens must be at most " + std::to_string(output_tokens_per_choice_max));
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":5,"stream":"yes")")),
            "stream must be a boolean");
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":5,"thinking":"on")")),
            "thinking must be an object");
  EXPECT_EQ(inspect_error(
                body_with(R"("max_tokens":5,"thinking":{"type":"enabled","budget_tokens":-1})")),
            "thinking.budget_tokens must be an integer >= 1");
  EXPECT_EQ(inspect_error(
                body_with(R"("max_tokens":5,"thinking":{"budget_tokens":1,"budget_tokens":2})")),
            "member \"thinking.budget_tokens\" appears more than once");
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":5,"service_tier":3)")),
            "service_tier must be a string");
  EXPECT_EQ(inspect_error(body_with(R"("max_tokens":5,"max_tokens":6)")),
            "member \"max_tokens\" appears more than once");
  EXPECT_EQ(inspect_error(R"({"model":"m","max_tokens":5})"), "messages is required");
  EXPECT_EQ(inspect_error(R"({"model":"m","max_tokens":5,"messages":[]})"),
            "messages must be a non-empty array of objects");
  EXPECT_EQ(inspect_error(R"({"model":"m","max_tokens":5,"messages":["hi"]})"),
            "messages must be a non-empty array of objects");
  EXPECT_EQ(inspect_error(R"({"max_tokens":5,"messages":[{}]})"), "model is required");
  EXPECT_EQ(inspect_error(R"({"model":5,"max_tokens":5,"messages":[{}]})"),
            "model must be a string");
  EXPECT_NE(inspect_error(R"({"model":"m","max_tokens":5,"messages":[{"a":tru}]})")
                .find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(inspect_error(body_with(R"("max_tokens":5} {)")).find("not valid JSON"),
            std::string::npos);
  EXPECT_EQ(inspect_error("[1]"), "request body must be a JSON object");
}

TEST(InspectMessagesRequest, NullOptionalMembersAreAbsent) {
  const auto r =
      inspect_ok(body_with(R"("max_tokens":5,"stream":null,"thinking":null,"service_tier":null)"));
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.thinking_budget);
  EXPECT_FALSE(r.service_tier);
  const auto disabled = inspect_ok(body_with(R"("max_tokens":5,"thinking":{"type":"disabled"})"));
  EXPECT_FALSE(disabled.thinking_budget);
}

TEST(MessagesPerChoiceMin, IsAboveTheBudgetOrTheProvidersMinimumWhicheverIsLess) {
  EXPECT_EQ(messages_per_choice_min(inspect_ok(body_with(R"("max_tokens":5)"))), 1);
  EXPECT_EQ(messages_per_choice_min(
                inspect_ok(body_with(R"("max_tokens":5,"thinking":{"budget_tokens":3000})"))),
            thinking_budget_tokens_min + 1);
  EXPECT_EQ(messages_per_choice_min(
                inspect_ok(body_with(R"("max_tokens":5,"thinking":{"budget_tokens":500})"))),
            501);
}

TEST(RewriteMessagesRequest, WritesTheHeldLimitIntoMaxTokensAndNothingElse) {
  const std::string body = body_with(R"("max_tokens" : 4096 ,"metadata":{"user_id":"u"})");
  const auto r = inspect_ok(body);
  EXPECT_FALSE(messages_rewrite_needed(r, 4096));
  EXPECT_EQ(rewrite_messages_request(body, r, 4096), body);
  ASSERT_TRUE(messages_rewrite_needed(r, 2000));
  const std::string sent = rewrite_messages_request(body, r, 2000);
  EXPECT_EQ(sent, body_with(R"("max_tokens" : 2000 ,"metadata":{"user_id":"u"})"));
}

TEST(RewriteMessagesRequest, LowersTheThinkingBudgetUnderALoweredMaxTokens) {
  const std::string body =
      body_with(R"("max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":4000})");
  const auto r = inspect_ok(body);
  const std::string above =
      rewrite_messages_request(body, r, 5000);  // still above the budget: kept
  EXPECT_EQ(sent_member(above, "max_tokens"), 5000);
  EXPECT_EQ(sent_member(above, "budget_tokens"), 4000);
  const std::string at = rewrite_messages_request(body, r, 4000);
  EXPECT_EQ(sent_member(at, "max_tokens"), 4000);
  EXPECT_EQ(sent_member(at, "budget_tokens"), 3999);
  const std::string least = rewrite_messages_request(body, r, messages_per_choice_min(r));
  EXPECT_EQ(sent_member(least, "max_tokens"), thinking_budget_tokens_min + 1);
  EXPECT_EQ(sent_member(least, "budget_tokens"), thinking_budget_tokens_min);
}

TEST(RewriteMessagesRequest, LeavesABudgetTheClientSetAtItsOwnMaxTokensAsSent) {
  // Not the gateway's rewrite: the provider answers the request as the client wrote it.
  const std::string body =
      body_with(R"("max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":3000})");
  const auto r = inspect_ok(body);
  EXPECT_FALSE(messages_rewrite_needed(r, 2000));
  EXPECT_EQ(rewrite_messages_request(body, r, 2000), body);
}

}  // namespace
}  // namespace cairva::wire
