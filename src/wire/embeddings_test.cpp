#include <gtest/gtest.h>

#include <string>

#include "core/estimate.h"
#include "wire/embeddings_codec.h"
#include "wire/embeddings_request.h"

namespace cairva::wire {
namespace {

EmbeddingsRequest inspect_ok(std::string_view body) {
  auto r = inspect_embeddings_request(body);
  EXPECT_TRUE(r.ok()) << body << " -> " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : EmbeddingsRequest{};
}

std::string inspect_error(std::string_view body) {
  auto r = inspect_embeddings_request(body);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return {};
  EXPECT_EQ(r.error().code, ErrorCode::invalid_request);
  return r.error().message;
}

TEST(InspectEmbeddingsRequest, OneStringIsOneItemCountedByCharacters) {
  const auto r =
      inspect_ok(R"({"model":"text-embedding-3-small","input":"The food was delicious."})");
  EXPECT_EQ(r.model, "text-embedding-3-small");
  EXPECT_EQ(r.prompt, (core::PromptFacts{.chars = 5 + 5 + 23, .items = 1}));
}

TEST(InspectEmbeddingsRequest, EachStringOfAnArrayIsAnItem) {
  const auto r =
      inspect_ok(R"({"model":"m","input":["first text","second one","third"],"dimensions":256})");
  EXPECT_EQ(r.prompt, (core::PromptFacts{.chars = 5 + 5 + 10 + 10 + 5 + 10, .items = 3}));
}

TEST(InspectEmbeddingsRequest, TokenArraysCountTheirTokensExactlyAndNoCharacters) {
  const auto one = inspect_ok(R"({"model":"m","input":[101,2023,2003,1037,3231,102]})");
  EXPECT_EQ(one.prompt, (core::PromptFacts{.chars = 5, .items = 1, .tokens = 6}))
      << "only \"model\" counts";
  const auto two = inspect_ok(R"({"model":"m","input":[[1,2,3],[4,5]],"user":"u"})");
  EXPECT_EQ(two.prompt, (core::PromptFacts{.chars = 5 + 4 + 1, .items = 2, .tokens = 5}));
  EXPECT_EQ(core::input_estimate(two.prompt), 4 + 5 + 8 + 8);
}

TEST(InspectEmbeddingsRequest, RefusesEveryOtherShapeOfInput) {
  const std::string must =
      "input must be a string, an array of strings, an array of token integers or an array of "
      "token arrays";
  for (const char* input : {"5", "null", "{}", "[\"a\",1]", "[1,\"a\"]", "[[1],2]", "[1.5]", "[-1]",
                            "[18446744073709551615]", "[[\"a\"]]", "[[[1]]]", "[true]"}) {
    EXPECT_EQ(inspect_error(std::string(R"({"model":"m","input":)") + input + "}"), must) << input;
  }
  EXPECT_EQ(inspect_error(R"({"model":"m","input":[]})"), "input must not be empty");
  EXPECT_EQ(inspect_error(R"({"model":"m","input":[[1],[]]})"),
            "input must not hold an empty token array");
  EXPECT_EQ(inspect_error(R"({"model":"m"})"), "input is required");
  EXPECT_EQ(inspect_error(R"({"input":"x"})"), "model is required");
  EXPECT_EQ(inspect_error(R"({"model":"m","input":"x","input":"y"})"),
            "member \"input\" appears more than once");
  EXPECT_NE(inspect_error(R"({"model":"m","input":"x","user":)").find("not valid JSON"),
            std::string::npos);
}

// Embeddings have no stream: a client asking for one is told so instead of being forwarded.
TEST(InspectEmbeddingsRequest, RefusesStreamTrueAndAcceptsFalseOrNull) {
  EXPECT_EQ(inspect_error(R"({"model":"m","input":"x","stream":true})"),
            "stream: embeddings are not streamed; remove \"stream\" or set it to false");
  EXPECT_EQ(inspect_error(R"({"model":"m","input":"x","stream":"yes"})"),
            "stream must be a boolean");
  EXPECT_EQ(inspect_error(R"({"model":"m","input":"x","stream":false,"stream":false})"),
            "member \"stream\" appears more than once");
  // A false or null stream is no stream; its key counts as any other member's would.
  EXPECT_EQ(inspect_ok(R"({"model":"m","input":"abc","stream":false})").prompt,
            (core::PromptFacts{.chars = 5 + 5 + 3 + 6, .items = 1}));
  EXPECT_EQ(inspect_ok(R"({"model":"m","input":"abc","stream":null})").prompt,
            (core::PromptFacts{.chars = 5 + 5 + 3 + 6, .items = 1}));
}

TEST(EmbeddingsCodec, BooksPromptTokensAsInputAndNothingAsOutput) {
  const std::string body =
      R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"m",)"
      R"("usage":{"prompt_tokens":8,"total_tokens":8}})";
  auto r = EmbeddingsCodec::read_response(body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->usage, (core::Tokens{8, 0}));
  EXPECT_EQ(r->id, "") << "the body has no id: the flow keys by x-request-id";
  EXPECT_NE(EmbeddingsCodec::with_usage_source(body, *r).find(R"("usage_source":"provider"})"),
            std::string::npos);
}

TEST(EmbeddingsCodec, UsageWithoutPromptTokensIsMissing) {
  for (const std::string usage : {R"({"total_tokens":8})", R"({"prompt_tokens":-8})", "null"}) {
    auto r = EmbeddingsCodec::read_response(R"({"object":"list","usage":)" + usage + "}");
    ASSERT_TRUE(r.ok()) << usage;
    EXPECT_FALSE(r->usage) << usage;
  }
}

}  // namespace
}  // namespace cairva::wire
