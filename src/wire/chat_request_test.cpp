#include "wire/chat_request.h"

#include <fstream>
#include <sstream>
#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "core/estimate.h"
#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// simdjson's SIMDJSON_PADDING: the spare capacity the in-place overload reads the body with.
constexpr size_t parser_padding_bytes = 64;

// Inspects `body` through both entry points, the padded copy and in place, and expects
// the same answer from each (and the body unchanged).
Result<ChatRequest> inspect_both(std::string_view body) {
  auto copied = inspect_chat_request(body);
  std::string in_place(body);
  in_place.reserve(body.size() + parser_padding_bytes);
  auto r = inspect_chat_request(in_place);
  EXPECT_EQ(in_place, body);
  EXPECT_EQ(r.ok(), copied.ok()) << body;
  if (r.ok() && copied.ok()) {
    EXPECT_TRUE(*r == *copied) << "in place and copying read " << body << " differently";
  } else if (!r.ok() && !copied.ok()) {
    EXPECT_EQ(r.error().message, copied.error().message) << body;
  }
  return copied;
}

ChatRequest inspect_ok(std::string_view body) {
  auto r = inspect_both(body);
  EXPECT_TRUE(r.ok()) << body << " -> " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : ChatRequest{};
}

std::string inspect_error(std::string_view body) {
  auto r = inspect_both(body);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return {};
  EXPECT_EQ(r.error().code, ErrorCode::invalid_request);
  return r.error().message;
}

constexpr std::string_view msgs = R"("messages":[{"role":"user","content":"hi"}])";

std::string body_with(std::string_view members) {
  return std::string(R"({"model":"m",)") + std::string(msgs) + (members.empty() ? "" : ",") +
         std::string(members) + "}";
}

TEST(InspectChatRequest, EveryInputEstimateVectorMatches) {
  const auto doc = bj::parse(read_file(CAIRVA_VECTORS_DIR "/input-estimate.json"));
  const auto& cases = doc.at("cases").as_array();
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    const std::string name(c.at("name").as_string());
    const std::string body(c.at("body").as_string());
    auto r = inspect_both(body);
    ASSERT_TRUE(r.ok()) << name << ": " << r.error().message;
    EXPECT_EQ(core::input_estimate(r->prompt), c.at("input_estimate").as_int64()) << name;
    if (!c.as_object().contains("remaining_output")) {
      const core::OutputRequest out{r->max_completion_tokens, r->max_tokens, r->n};
      EXPECT_EQ(core::output_hold(out, core::output_hold_tokens_default), c.at("output_hold").as_int64())
          << name;
    }
  }
}

TEST(InspectChatRequest, ReadsEveryMember) {
  const std::string body =
      R"({"model":"gpt-x","messages":[{"role":"user","content":"abc"},{"role":"system","content":"de"}],)"
      R"("n":3,"stream":true,"stream_options":{"include_usage":true},"max_tokens":100,)"
      R"("max_completion_tokens":50,"temperature":0.5})";
  const ChatRequest r = inspect_ok(body);
  EXPECT_EQ(r.model, "gpt-x");
  EXPECT_EQ(r.n, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.max_tokens, 100);
  EXPECT_EQ(r.max_completion_tokens, 50);
  EXPECT_EQ(r.prompt.messages, 2);
  EXPECT_EQ(r.prompt.chars, 5);
  ASSERT_TRUE(r.max_tokens_value);
  EXPECT_EQ(body.substr(r.max_tokens_value->offset, r.max_tokens_value->size), "100");
  ASSERT_TRUE(r.max_completion_tokens_value);
  EXPECT_EQ(body.substr(r.max_completion_tokens_value->offset, r.max_completion_tokens_value->size), "50");
  ASSERT_TRUE(r.stream_options_value);
  EXPECT_EQ(body.substr(r.stream_options_value->offset, r.stream_options_value->size), R"({"include_usage":true})");
}

TEST(InspectChatRequest, DefaultsWhenOptionalMembersAbsentOrNull) {
  const ChatRequest r = inspect_ok(body_with(R"("n":null,"stream":null,"max_tokens":null,"max_completion_tokens":null)"));
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.max_completion_tokens);
  EXPECT_TRUE(r.max_tokens_value);  // present, so a rewrite replaces the null
  const ChatRequest plain = inspect_ok(body_with(""));
  EXPECT_FALSE(plain.max_tokens_value);
  EXPECT_FALSE(plain.stream_options_value);
}

TEST(InspectChatRequest, CountsNamesToolCallsAndTextPartsOnly) {
  // name "bob" (3) + text part "four" (4) + tool call name "fn" (2) + arguments "{}" (2).
  const std::string body =
      R"({"model":"m","messages":[{"role":"user","name":"bob","content":[{"text":"four","type":"text"},)"
      R"({"type":"image_url","text":"ignored","image_url":{"url":"x"}}]},)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"fn","arguments":"{}"}}]}]})";
  const ChatRequest r = inspect_ok(body);
  EXPECT_EQ(r.prompt.chars, 11);
  EXPECT_EQ(r.prompt.messages, 2);
}

TEST(InspectChatRequest, CountsEscapedCharactersOnceEach) {
  // "\n" is one code point, "\u00e9" one, a surrogate pair one.
  const ChatRequest r = inspect_ok(R"({"model":"m","messages":[{"role":"user","content":"a\nb\u00e9\ud83d\ude00"}]})");
  EXPECT_EQ(r.prompt.chars, 5);
}

TEST(InspectChatRequest, InPlaceWithoutSpareCapacityCopiesAndLeavesTheBodyAlone) {
  std::string body = body_with(R"("max_tokens":7)");
  body.shrink_to_fit();
  const std::string before = body;
  auto r = inspect_chat_request(body);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->max_tokens, 7);
  EXPECT_EQ(body, before);
}

TEST(InspectChatRequest, RefusesBadEscapesWhereverTheStringIs) {
  // Counted strings are checked in their raw bytes, never unescaped: each bad escape must
  // still be refused, with simdjson's reason, in every place a string is counted or skipped.
  const std::string reason = "request body is not valid JSON: Problem while parsing a string";
  for (const std::string bad : {R"(\q)", R"(\u12)", R"(\u00G0)", R"(\ud83d)", R"(\ude00)", R"(\ud83d\u0041)"}) {
    const std::vector<std::string> bodies = {
        R"({"model":"m","messages":[{"role":"user","content":"a)" + bad + R"("}]})",
        R"({"model":"m","messages":[{"role":"user","name":")" + bad + R"(","content":"a"}]})",
        R"({"model":"m","messages":[{"role":")" + bad + R"(","content":"a"}]})",
        R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":")" + bad + R"("}]}]})",
        R"({"model":"m","messages":[{"role":"user","content":[{"type":"image","text":")" + bad + R"("}]}]})",
        R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":")" +
            bad + R"("}}]}]})",
        R"({"model":"m","messages":[{"role":"user","content":"a"}],"user":")" + bad + R"("})",
    };
    for (const auto& b : bodies) EXPECT_EQ(inspect_error(b), reason) << b;
  }
}

TEST(InspectChatRequest, ToolsCountAsRawTextIncludingWhitespaceAndEscapes) {
  const std::string tools = R"([ {"d": "\u00e9 é"} ])";
  const ChatRequest r = inspect_ok(body_with(R"("tools": )" + tools + " "));
  // "hi" (2) + the raw tools text in code points.
  EXPECT_EQ(r.prompt.chars, 2 + static_cast<int64_t>(tools.size()) - 1);
}

TEST(InspectChatRequest, ToolsOfAnyTypeCountAsTheirRawText) {
  // Regression: a scalar `tools` is not consumed by reading it, so its end comes from the token.
  EXPECT_EQ(inspect_ok(body_with(R"("tools": "ab" ,"n":1)")).prompt.chars, 2 + 4);
  EXPECT_EQ(inspect_ok(body_with(R"("tools":null)")).prompt.chars, 2 + 4);
  EXPECT_EQ(inspect_ok(body_with(R"("tools":12.5e1)")).prompt.chars, 2 + 6);
  EXPECT_EQ(inspect_ok(body_with(R"("tools":"a\"b")")).prompt.chars, 2 + 6);
}

TEST(InspectChatRequest, EscapedMemberNamesAreTheMembersTheyName) {
  // A provider decodes "max\u005ftokens" as max_tokens: so must admission.
  const ChatRequest r = inspect_ok(body_with(R"("max\u005ftokens":7)"));
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_NE(inspect_error(body_with(R"("max_tokens":5,"max\u005ftokens":7)")).find("more than once"), std::string::npos);
}

TEST(InspectChatRequest, RefusesMalformedBodies) {
  const std::vector<std::string> bodies = {
      "",
      "   ",
      "not json",
      "{",
      R"({"model":"m",)",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}]} x)",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}]}})",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}]}{})",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"x":[1,,2]})",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"x":tru})",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"x":"\q"})",
      R"({"model":"m","messages":[{"role":"user","content":"h\i"}]})",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"x":01})",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"x":{"a" 1}})",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"a":nul}]})",
      // Regression (found by chat_request_fuzz): a stray ':' after an unread string value.
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"d":"a":{"b":1}}]})",
      R"({"model":"m","messages":[{"role":"user","content":"hi" : "x"}]})",
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"x":"a","y")",
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\x01\"}]}",
  };
  for (const auto& b : bodies) {
    const std::string message = inspect_error(b);
    EXPECT_FALSE(message.empty()) << b;
  }
}

TEST(InspectChatRequest, RefusesNonObjectBodies) {
  for (std::string_view b : {"[]", "5", "\"s\"", "null", "true", "[{\"model\":\"m\"}]"}) {
    EXPECT_EQ(inspect_error(b), "request body must be a JSON object") << b;
  }
}

TEST(InspectChatRequest, RefusesDeepNesting) {
  std::string deep = std::string(2000, '[') + std::string(2000, ']');
  EXPECT_FALSE(inspect_error(body_with("\"x\":" + deep)).empty());
  std::string nested_ok = std::string(50, '[') + std::string(50, ']');
  inspect_ok(body_with("\"x\":" + nested_ok));
}

// The bound's edge (the body is depth 1, "x"'s value depth 2): a value at json_depth_max
// passes, one level more is refused. A Debug build also checks that simdjson is never
// asked to open a container beyond its own max_depth on the way.
TEST(InspectChatRequest, NestingBoundIsExact) {
  auto arrays = [](int n, std::string_view inner) { return std::string(n, '[') + std::string(inner) + std::string(n, ']'); };
  const int to_limit = json_depth_max - 1;  // arrays from depth 2 to json_depth_max
  inspect_ok(body_with("\"x\":" + arrays(to_limit, "")));
  EXPECT_FALSE(inspect_error(body_with("\"x\":" + arrays(to_limit + 1, ""))).empty());
  inspect_ok(body_with("\"x\":" + arrays(to_limit - 1, "1")));
  EXPECT_FALSE(inspect_error(body_with("\"x\":" + arrays(to_limit, "1"))).empty());
  EXPECT_FALSE(inspect_error(body_with("\"x\":" + arrays(to_limit, "{\"a\":1}"))).empty());
}

TEST(InspectChatRequest, NamesTheFieldInTypeErrors) {
  struct Case {
    std::string members;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"("max_tokens":0)", "max_tokens must be an integer >= 1"},
      {R"("max_tokens":-3)", "max_tokens must be an integer >= 1"},
      {R"("max_tokens":1.5)", "max_tokens must be an integer >= 1"},
      {R"("max_tokens":1e3)", "max_tokens must be an integer >= 1"},
      {R"("max_tokens":"10")", "max_tokens must be an integer >= 1"},
      {R"("max_tokens":true)", "max_tokens must be an integer >= 1"},
      {R"("max_tokens":[1])", "max_tokens must be an integer >= 1"},
      {R"("max_tokens":99999999999999999999)", "max_tokens must be at most 1099511627776"},
      {R"("max_tokens":18446744073709551615)", "max_tokens must be at most 1099511627776"},
      {R"("max_tokens":1099511627777)", "max_tokens must be at most 1099511627776"},
      {R"("max_completion_tokens":0)", "max_completion_tokens must be an integer >= 1"},
      {R"("max_completion_tokens":2.0)", "max_completion_tokens must be an integer >= 1"},
      {R"("n":0)", "n must be an integer >= 1"},
      {R"("n":1.5)", "n must be an integer >= 1"},
      {R"("n":129)", "n must be at most 128"},
      {R"("stream":"yes")", "stream must be a boolean"},
      {R"("stream":1)", "stream must be a boolean"},
      {R"("stream_options":true)", "stream_options must be an object"},
      {R"("stream_options":{"include_usage":1})", "stream_options.include_usage must be a boolean"},
      {R"("n":2,"n":3)", "member \"n\" appears more than once"},
      {R"("stream_options":{"include_usage":true,"include_usage":false})",
       "member \"stream_options.include_usage\" appears more than once"},
  };
  for (const auto& c : cases) EXPECT_EQ(inspect_error(body_with(c.members)), c.message) << c.members;
}

TEST(InspectChatRequest, RequiresModelAndNonEmptyMessages) {
  EXPECT_EQ(inspect_error(R"({"messages":[{"role":"user","content":"hi"}]})"), "model is required");
  EXPECT_EQ(inspect_error(R"({"model":5,"messages":[{"role":"user","content":"hi"}]})"), "model must be a string");
  EXPECT_EQ(inspect_error(R"({"model":"m\u0000x","messages":[{"role":"user","content":"hi"}]})"),
            "model must not contain a NUL character");
  EXPECT_EQ(inspect_error(R"({"model":"m"})"), "messages is required");
  const std::string must = "messages must be a non-empty array of objects";
  EXPECT_EQ(inspect_error(R"({"model":"m","messages":[]})"), must);
  EXPECT_EQ(inspect_error(R"({"model":"m","messages":{}})"), must);
  EXPECT_EQ(inspect_error(R"({"model":"m","messages":null})"), must);
  EXPECT_EQ(inspect_error(R"({"model":"m","messages":["hi"]})"), must);
  EXPECT_EQ(inspect_error(R"({"model":"m","messages":[{"content":"a"},3]})"), must);
}

// ----- rewrite -----

bj::value reparse(const std::string& s) {
  boost::system::error_code ec;
  bj::value v = bj::parse(s, ec);
  EXPECT_FALSE(ec) << "not valid JSON: " << s;
  return v;
}

std::string rewrite(const std::string& body, RewritePlan plan) {
  const ChatRequest r = inspect_ok(body);
  std::string out = rewrite_chat_request(body, r, plan);
  reparse(out);
  return out;
}

TEST(RewriteChatRequest, ReplacesEveryLimitTheClientSent) {
  const std::string body = R"({"model":"m", "max_tokens" : 500 ,"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":  400})";
  EXPECT_EQ(rewrite(body, {.per_choice_limit = 37}),
            R"({"model":"m", "max_tokens" : 37 ,"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":  37})");
  const std::string only_mct = body_with(R"("max_completion_tokens":400)");
  EXPECT_EQ(rewrite(only_mct, {.per_choice_limit = 9}), body_with(R"("max_completion_tokens":9)"));
}

TEST(RewriteChatRequest, AddsMaxTokensWhenTheClientSentNone) {
  const std::string body = " \n{\"model\":\"m\"," + std::string(msgs) + "}";
  EXPECT_EQ(rewrite(body, {.per_choice_limit = 12}),
            " \n{\"max_tokens\":12,\"model\":\"m\"," + std::string(msgs) + "}");
}

TEST(RewriteChatRequest, GivesANullMaxTokensTheValueInsteadOfRepeatingIt) {
  EXPECT_EQ(rewrite(body_with(R"("max_tokens":null,"max_completion_tokens":null)"), {.per_choice_limit = 5}),
            body_with(R"("max_tokens":5,"max_completion_tokens":null)"));
  // A null beside a real value stays as it is.
  EXPECT_EQ(rewrite(body_with(R"("max_tokens":null,"max_completion_tokens":80)"), {.per_choice_limit = 5}),
            body_with(R"("max_tokens":null,"max_completion_tokens":5)"));
}

TEST(RewriteChatRequest, InjectsIncludeUsage) {
  struct Case {
    std::string members;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {R"("stream":true)", R"("stream":true)"},  // new stream_options at the front
      {R"("stream":true,"stream_options":{})", R"("stream":true,"stream_options":{"include_usage":true})"},
      {R"("stream":true,"stream_options":null)", R"("stream":true,"stream_options":{"include_usage":true})"},
      {R"("stream":true,"stream_options":{ "x":1 })", R"("stream":true,"stream_options":{"include_usage":true, "x":1 })"},
      {R"("stream":true,"stream_options":{"include_usage":false})", R"("stream":true,"stream_options":{"include_usage":true})"},
      {R"("stream":true,"stream_options":{"include_usage": null ,"y":2})", R"("stream":true,"stream_options":{"include_usage": true ,"y":2})"},
  };
  for (const auto& c : cases) {
    std::string expected = body_with(c.expected);
    if (c.members == R"("stream":true)") expected.insert(1, R"("stream_options":{"include_usage":true},)");
    EXPECT_EQ(rewrite(body_with(c.members), {.include_usage = true}), expected) << c.members;
  }
}

TEST(RewriteChatRequest, LowersAndInjectsTogether) {
  const std::string out = rewrite(body_with(R"("stream":true)"), {.per_choice_limit = 3, .include_usage = true});
  const auto v = reparse(out);
  EXPECT_EQ(v.at("max_tokens").as_int64(), 3);
  EXPECT_TRUE(v.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(out.substr(out.size() - body_with(R"("stream":true)").size() + 1), body_with(R"("stream":true)").substr(1));
}

TEST(RewriteChatRequest, EmptyPlanLeavesBodyUnchanged) {
  const std::string body = body_with(R"("max_tokens":10)");
  EXPECT_EQ(rewrite(body, {}), body);
}

}  // namespace
}  // namespace cairva::wire
