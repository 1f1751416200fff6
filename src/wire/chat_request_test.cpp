#include "wire/chat_request.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "core/estimate.h"
#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

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
  EXPECT_EQ(r.prompt.items, 2);
  EXPECT_EQ(r.prompt.chars, 126);  // every key and string but "gpt-x" (SPEC §4)
  EXPECT_EQ(r.prompt.media, 0);
  ASSERT_TRUE(r.max_tokens_value);
  EXPECT_EQ(body.substr(r.max_tokens_value->offset, r.max_tokens_value->size), "100");
  ASSERT_TRUE(r.max_completion_tokens_value);
  EXPECT_EQ(body.substr(r.max_completion_tokens_value->offset, r.max_completion_tokens_value->size),
            "50");
  ASSERT_TRUE(r.stream_options_value);
  EXPECT_EQ(body.substr(r.stream_options_value->offset, r.stream_options_value->size),
            R"({"include_usage":true})");
}

TEST(InspectChatRequest, DefaultsWhenOptionalMembersAbsentOrNull) {
  const ChatRequest r = inspect_ok(
      body_with(R"("n":null,"stream":null,"max_tokens":null,"max_completion_tokens":null)"));
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.max_completion_tokens);
  EXPECT_TRUE(r.max_tokens_value);  // present, so a rewrite replaces the null
  const ChatRequest plain = inspect_ok(body_with(""));
  EXPECT_FALSE(plain.max_tokens_value);
  EXPECT_FALSE(plain.stream_options_value);
}

std::string message_with(std::string_view content) {
  return R"({"model":"m","messages":[{"role":"user","content":)" + std::string(content) + "}]}";
}

// SPEC §4's one rule: every key and string value counts but the top-level model's value;
// each media payload counts one media part instead of its characters. Expected counts
// worked out by hand from the rule (tests/vectors has the same rule's cases per API).
TEST(InspectChatRequest, CountsEveryKeyAndStringAndEachMediaFormOnce) {
  struct Case {
    const char* name;
    std::string body;
    int64_t chars;
    int64_t media;
  };
  const std::vector<Case> cases = {
      {"a string under image_url",
       message_with(R"([{"type":"image_url","image_url":"data:image/png;base64,AAAA"}])"), 50, 1},
      {"url inside an image_url object",
       message_with(
           R"([{"type":"image_url","image_url":{"url":"https://x/cat.png","detail":"low"}}])"),
       62, 1},
      {"data inside an input_audio object",
       message_with(R"([{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}])"),
       67, 1},
      {"a string under file_data",
       message_with(R"([{"type":"file","file":{"filename":"a.pdf","file_data":"JVBERi0="}}])"), 62,
       1},
      {"data inside a source object",
       message_with(
           R"([{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}])"),
       76, 1},
      {"url inside a source object",
       message_with(R"([{"type":"image","source":{"type":"url","url":"https://x/a.png"}}])"), 53,
       1},
      {"file_data anywhere, even at the top level",
       R"({"model":"m","messages":[{"role":"user","content":"hi"}],"file_data":"abc"})", 39, 1},
      {"url elsewhere counts as text",
       message_with(R"([{"type":"text","text":"t","url":"https://x"}])"), 53, 0},
      {"data elsewhere counts as text", message_with(R"([{"type":"x","x":{"data":"abcdef"}}])"), 44,
       0},
      {"a media key's non-string value is walked",
       message_with(R"([{"type":"image_url","image_url":{"url":{"href":"abc"}}}])"), 60, 0},
      {"objects in an array under source are not source objects",
       message_with(R"([{"source":[{"data":"abcd"}]}])"), 42, 0},
      {"only the top-level model value is left out",
       R"({"model":"gpt","messages":[{"role":"user","content":"hi","model":"inner"}],"metadata":{"model":"abc"}})",
       56, 0},
      {"escaped keys and values count decoded",
       R"({"model":"m","messages":[{"role":"user","con\u0074ent":"\u00e9\n"}],"x\u0079":"\ud83d\ude00"})",
       33, 0},
      {"an escaped media key is the key it names",
       R"({"model":"m","messages":[{"role":"user","content":[{"image\u005furl":"data:x"}]}]})", 37,
       1},
      {"stream_options' keys and strings count",
       R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true,"other":"ab"}})",
       64, 0},
      {"service_tier's value counts",
       R"({"model":"m","messages":[{"role":"user","content":"hi"}],"service_tier":"flex"})", 46, 0},
  };
  for (const Case& c : cases) {
    const ChatRequest r = inspect_ok(c.body);
    EXPECT_EQ(r.prompt.chars, c.chars) << c.name;
    EXPECT_EQ(r.prompt.media, c.media) << c.name;
    EXPECT_EQ(r.prompt.items, 1) << c.name;
  }
}

TEST(InspectChatRequest, CountsEscapedCharactersOnceEach) {
  // "\n" is one code point, "\u00e9" one, a surrogate pair one: 5, beside 28 of keys and "user".
  const ChatRequest r = inspect_ok(
      R"({"model":"m","messages":[{"role":"user","content":"a\nb\u00e9\ud83d\ude00"}]})");
  EXPECT_EQ(r.prompt.chars, 28 + 5);
}

TEST(InspectChatRequest, WhatAProviderBillsRaisesTheEstimate) {
  // Each member below was free before SPEC §4's one rule: its text must now count.
  const std::string big(30'000, 'x');
  const int64_t base = core::input_estimate(inspect_ok(body_with("")).prompt);
  for (
      const std::string& members :
      {R"("functions":[{"name":"f","description":")" + big + R"("}])",
       R"("response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"description":")" +
           big + R"("}}})",
       R"("prediction":{"type":"content","content":")" + big + R"("})",
       R"("tools":[{"type":"function","function":{"name":"f","description":")" + big + R"("}}])"}) {
    const int64_t estimate = core::input_estimate(inspect_ok(body_with(members)).prompt);
    EXPECT_GE(estimate, base + static_cast<int64_t>(big.size()) / 3) << members.substr(0, 40);
  }
  // An unknown member of a message, or a file part's name, as much.
  const ChatRequest r = inspect_ok(message_with(R"("hi","x_note":")" + big + R"(")"));
  EXPECT_GE(r.prompt.chars, static_cast<int64_t>(big.size()));
}

TEST(InspectChatRequest, ServiceTierIsAStringOrNull) {
  EXPECT_EQ(inspect_ok(body_with(R"("service_tier":"priority")")).service_tier, "priority");
  EXPECT_FALSE(inspect_ok(body_with(R"("service_tier":null)")).service_tier);
  EXPECT_FALSE(inspect_ok(body_with("")).service_tier);
  EXPECT_EQ(inspect_ok(body_with(R"("service_tier":"pr\u0069ority")")).service_tier, "priority");
  for (const char* bad : {R"("service_tier":1)", R"("service_tier":true)",
                          R"("service_tier":["priority"])", R"("service_tier":{"t":"priority"})"}) {
    EXPECT_EQ(inspect_error(body_with(bad)), "service_tier must be a string") << bad;
  }
  EXPECT_EQ(inspect_error(body_with(R"("service_tier":"auto","service_tier":"priority")")),
            "member \"service_tier\" appears more than once");
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
  for (const std::string bad :
       {R"(\q)", R"(\u12)", R"(\u00G0)", R"(\ud83d)", R"(\ude00)", R"(\ud83d\u0041)"}) {
    const std::vector<std::string> bodies = {
        R"({"model":"m","messages":[{"role":"user","content":"a)" + bad + R"("}]})",
        R"({"model":"m","messages":[{"role":"user","name":")" + bad + R"(","content":"a"}]})",
        R"({"model":"m","messages":[{"role":")" + bad + R"(","content":"a"}]})",
        R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":")" + bad +
            R"("}]}]})",
        R"({"model":"m","messages":[{"role":"user","content":[{"type":"image","text":")" + bad +
            R"("}]}]})",
        R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":")" +
            bad + R"("}}]}]})",
        R"({"model":"m","messages":[{"role":"user","content":"a"}],"user":")" + bad + R"("})",
    };
    for (const auto& b : bodies) EXPECT_EQ(inspect_error(b), reason) << b;
  }
}

TEST(InspectChatRequest, ToolsOfAnyTypeCountTheirStringsAndKeys) {
  // "hi" and the keys of body_with (2 + 28), then the tools member's name (5) and strings.
  EXPECT_EQ(inspect_ok(body_with(R"("tools": "ab" ,"n":1)")).prompt.chars, 30 + 5 + 2 + 1);
  EXPECT_EQ(inspect_ok(body_with(R"("tools":null)")).prompt.chars, 30 + 5);
  EXPECT_EQ(inspect_ok(body_with(R"("tools":12.5e1)")).prompt.chars, 30 + 5);
  EXPECT_EQ(inspect_ok(body_with(R"("tools":"a\"b")")).prompt.chars, 30 + 5 + 3);
  EXPECT_EQ(inspect_ok(body_with(R"("tools": [ {"d": "\u00e9 é"} ] )")).prompt.chars,
            30 + 5 + 1 + 3);
}

TEST(InspectChatRequest, EscapedMemberNamesAreTheMembersTheyName) {
  // A provider decodes "max\u005ftokens" as max_tokens: so must admission.
  const ChatRequest r = inspect_ok(body_with(R"("max\u005ftokens":7)"));
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_NE(
      inspect_error(body_with(R"("max_tokens":5,"max\u005ftokens":7)")).find("more than once"),
      std::string::npos);
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
  auto arrays = [](int n, std::string_view inner) {
    return std::string(n, '[') + std::string(inner) + std::string(n, ']');
  };
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
  for (const auto& c : cases)
    EXPECT_EQ(inspect_error(body_with(c.members)), c.message) << c.members;
}

TEST(InspectChatRequest, RequiresModelAndNonEmptyMessages) {
  EXPECT_EQ(inspect_error(R"({"messages":[{"role":"user","content":"hi"}]})"), "model is required");
  EXPECT_EQ(inspect_error(R"({"model":5,"messages":[{"role":"user","content":"hi"}]})"),
            "model must be a string");
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
  const std::string body =
      R"({"model":"m", "max_tokens" : 500 ,"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":  400})";
  EXPECT_EQ(
      rewrite(body, {.per_choice_limit = 37}),
      R"({"model":"m", "max_tokens" : 37 ,"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":  37})");
  const std::string only_mct = body_with(R"("max_completion_tokens":400)");
  EXPECT_EQ(rewrite(only_mct, {.per_choice_limit = 9}), body_with(R"("max_completion_tokens":9)"));
}

TEST(RewriteChatRequest, AddsTheProvidersLimitFieldWhenTheClientSentNone) {
  const std::string body = " \n{\"model\":\"m\"," + std::string(msgs) + "}";
  EXPECT_EQ(rewrite(body, {.per_choice_limit = 12}),
            " \n{\"max_completion_tokens\":12,\"model\":\"m\"," + std::string(msgs) + "}");
  EXPECT_EQ(rewrite(body, {.per_choice_limit = 12, .limit_field = limit_field_max_tokens}),
            " \n{\"max_tokens\":12,\"model\":\"m\"," + std::string(msgs) + "}");
}

TEST(RewriteChatRequest, GivesEveryNullLimitTheHeldValue) {
  EXPECT_EQ(rewrite(body_with(R"("max_tokens":null,"max_completion_tokens":null)"),
                    {.per_choice_limit = 5}),
            body_with(R"("max_tokens":5,"max_completion_tokens":5)"));
  EXPECT_EQ(rewrite(body_with(R"("max_tokens":null,"max_completion_tokens":80)"),
                    {.per_choice_limit = 5}),
            body_with(R"("max_tokens":5,"max_completion_tokens":5)"));
  // A null member is the field written: the provider's limit_field is not added beside it.
  EXPECT_EQ(rewrite(body_with(R"("max_tokens":null)"), {.per_choice_limit = 5}),
            body_with(R"("max_tokens":5)"));
}

TEST(RewriteChatRequest, EveryLimitMemberEqualsTheHoldEvenWhenNotLowered) {
  // max_completion_tokens wins the hold; the larger max_tokens beside it is brought down.
  EXPECT_EQ(rewrite(body_with(R"("max_tokens":500,"max_completion_tokens":40)"),
                    {.per_choice_limit = 40}),
            body_with(R"("max_tokens":40,"max_completion_tokens":40)"));
}

TEST(RewriteChatRequest, InjectsIncludeUsage) {
  struct Case {
    std::string members;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {R"("stream":true)", R"("stream":true)"},  // new stream_options at the front
      {R"("stream":true,"stream_options":{})",
       R"("stream":true,"stream_options":{"include_usage":true})"},
      {R"("stream":true,"stream_options":null)",
       R"("stream":true,"stream_options":{"include_usage":true})"},
      {R"("stream":true,"stream_options":{ "x":1 })",
       R"("stream":true,"stream_options":{"include_usage":true, "x":1 })"},
      {R"("stream":true,"stream_options":{"include_usage":false})",
       R"("stream":true,"stream_options":{"include_usage":true})"},
      {R"("stream":true,"stream_options":{"include_usage": null ,"y":2})",
       R"("stream":true,"stream_options":{"include_usage": true ,"y":2})"},
  };
  const std::string limit = R"("max_tokens":7,)";
  for (const auto& c : cases) {
    std::string expected = body_with(limit + c.expected);
    if (c.members == R"("stream":true)")
      expected.insert(1, R"("stream_options":{"include_usage":true},)");
    EXPECT_EQ(rewrite(body_with(limit + c.members), {.per_choice_limit = 7, .include_usage = true}),
              expected)
        << c.members;
  }
}

TEST(RewriteChatRequest, LowersAndInjectsTogether) {
  const std::string out =
      rewrite(body_with(R"("stream":true)"), {.per_choice_limit = 3, .include_usage = true});
  const auto v = reparse(out);
  EXPECT_EQ(v.at("max_completion_tokens").as_int64(), 3);
  EXPECT_FALSE(v.as_object().contains("max_tokens"));
  EXPECT_TRUE(v.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(out.substr(out.size() - body_with(R"("stream":true)").size() + 1),
            body_with(R"("stream":true)").substr(1));
}

TEST(RewriteChatRequest, NeededOnlyWhenTheBodyWouldChange) {
  struct Case {
    std::string members;
    RewritePlan plan;
    bool needed;
  };
  const std::vector<Case> cases = {
      {R"("max_tokens":10)", {.per_choice_limit = 10}, false},
      {R"("max_completion_tokens":10)", {.per_choice_limit = 10}, false},
      {R"("max_tokens":10,"max_completion_tokens":10)", {.per_choice_limit = 10}, false},
      {R"("max_tokens":10)", {.per_choice_limit = 9}, true},
      {R"("max_tokens":500,"max_completion_tokens":10)", {.per_choice_limit = 10}, true},
      {R"("max_tokens":null)", {.per_choice_limit = 10}, true},
      {R"("max_tokens":10,"max_completion_tokens":null)", {.per_choice_limit = 10}, true},
      {"", {.per_choice_limit = 10}, true},
      {R"("max_tokens":10)", {.per_choice_limit = 10, .include_usage = true}, true},
  };
  for (const Case& c : cases) {
    const std::string body = body_with(c.members);
    const ChatRequest r = inspect_ok(body);
    EXPECT_EQ(rewrite_needed(r, c.plan), c.needed) << c.members;
    if (!c.needed) {
      EXPECT_EQ(rewrite_chat_request(body, r, c.plan), body) << c.members;
    }
  }
}

}  // namespace
}  // namespace cairva::wire
