#include "wire/estimate_walk.h"

#include <gtest/gtest.h>

#include <string>

#include "wire/json.h"
#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace od = json::od;

// Walks the whole document `text` as one value at depth 1, as an inspector hands over a
// value it does not read itself.
simdjson::error_code walk_all(std::string_view text, core::PromptFacts& facts) {
  json::Scratch scratch;
  od::document doc;
  if (auto e = scratch.iterate(text).get(doc)) return e;
  od::value v;
  if (auto e = doc.get_value().get(v)) return e;
  EstimateWalk walk(facts);
  return walk.value(v, 1);
}

core::PromptFacts facts_of(std::string_view text) {
  core::PromptFacts facts;
  EXPECT_EQ(walk_all(text, facts), simdjson::SUCCESS) << text;
  return facts;
}

TEST(EstimateWalk, CountsKeysAndStringsAndNothingElse) {
  // "a" + "bc" + "d" + "ef"; numbers, booleans and nulls add nothing.
  const core::PromptFacts f = facts_of(R"({"a":"bc","d":[1,true,null,"ef",2.5e3]})");
  EXPECT_EQ(f.chars, 6);
  EXPECT_EQ(f.media, 0);
  EXPECT_EQ(f.items, 0);  // the inspector's to count
}

TEST(EstimateWalk, AWholeDocumentCountsItsModelToo) {
  // Leaving out the top-level model is the inspector's part: it reads that member itself.
  EXPECT_EQ(facts_of(R"({"model":"abc"})").chars, 8);
}

TEST(EstimateWalk, MediaPayloadsCountOncePerPartWhateverTheirSize) {
  const std::string big(100'000, 'A');
  const core::PromptFacts f =
      facts_of(R"({"input":[{"type":"input_image","image_url":")" + big +
               R"("},{"type":"input_file","file_data":")" + big + R"("}]})");
  EXPECT_EQ(f.media, 2);
  // input, type, input_image, image_url, type, input_file, file_data.
  EXPECT_EQ(f.chars, 5 + 4 + 11 + 9 + 4 + 10 + 9);
}

TEST(EstimateWalk, ChecksWhatItWalks) {
  core::PromptFacts f;
  EXPECT_NE(walk_all(R"({"a":"\q"})", f), simdjson::SUCCESS);
  EXPECT_NE(walk_all(R"({"a":[1,,2]})", f), simdjson::SUCCESS);
  EXPECT_NE(walk_all(R"({"image_url":"\ud83d"})", f),
            simdjson::SUCCESS);  // a media string's escapes too
  EXPECT_NE(walk_all(R"({"a":tru})", f), simdjson::SUCCESS);
}

TEST(EstimateWalk, RefusesNestingBeyondTheBound) {
  core::PromptFacts f;
  const auto arrays = [](int n) {
    return std::string(static_cast<size_t>(n), '[') + std::string(static_cast<size_t>(n), ']');
  };
  EXPECT_EQ(walk_all(arrays(json_depth_max), f), simdjson::SUCCESS);
  EXPECT_EQ(walk_all(arrays(json_depth_max + 1), f), simdjson::DEPTH_ERROR);
}

TEST(EstimateWalk, MediaParentComesFromTheKeyAnObjectIsUnder) {
  EXPECT_EQ(media_parent_of("image_url"), MediaParent::image_url);
  EXPECT_EQ(media_parent_of("input_audio"), MediaParent::input_audio);
  EXPECT_EQ(media_parent_of("source"), MediaParent::source);
  EXPECT_EQ(media_parent_of("file"), MediaParent::other);
}

}  // namespace
}  // namespace cairva::wire
