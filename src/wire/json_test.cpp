#include "wire/json.h"

#include <random>

#include <gtest/gtest.h>

namespace cairva::wire::json {
namespace {

int64_t naive_code_points(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

TEST(CountCodePoints, MatchesAByteByByteCountAtEveryLength) {
  const std::string sample = "aé你😀";  // 1, 2, 3 and 4 byte sequences
  std::string text;
  while (text.size() < 5000) text += sample;
  for (size_t len = 0; len < text.size(); len += (len < 64 ? 1 : 97)) {
    EXPECT_EQ(count_code_points(std::string_view(text).substr(0, len)),
              naive_code_points(std::string_view(text).substr(0, len)))
        << len;
  }
}

TEST(CountCodePoints, CountsLongRunsOfMultiByteCharacters) {
  // Long enough that every byte lane of the eight-at-a-time count is flushed many times.
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "😀";
  EXPECT_EQ(count_code_points(text), 10000);
  const uint32_t seed = 20261130;
  std::mt19937 rng(seed);
  std::string random_bytes(70000, '\0');
  for (char& c : random_bytes) c = static_cast<char>(rng());
  EXPECT_EQ(count_code_points(random_bytes), naive_code_points(random_bytes)) << "seed " << seed;
}

TEST(Scratch, ReusesItsBufferAndKeepsOffsets) {
  Scratch scratch;
  const std::string doc = R"(  {"a": [1, 2]})";
  od::document d;
  ASSERT_EQ(scratch.iterate(doc).get(d), simdjson::SUCCESS);
  od::object obj;
  ASSERT_EQ(d.get_object().get(obj), simdjson::SUCCESS);
  for (auto entry : obj) {
    od::field f;
    ASSERT_EQ(std::move(entry).get(f), simdjson::SUCCESS);
    od::value v = f.value();
    EXPECT_EQ(v.raw_json_token().data() - scratch.base(), 8);
    EXPECT_EQ(validate(v, 2), simdjson::SUCCESS);
    auto end = end_of_consumed(d, scratch.base());
    ASSERT_EQ(end.error(), simdjson::SUCCESS);
    EXPECT_EQ(end.value_unsafe(), 14u);
  }
  const size_t retained = scratch.retained_bytes();
  ASSERT_EQ(scratch.iterate("{}").get(d), simdjson::SUCCESS);
  EXPECT_EQ(scratch.retained_bytes(), retained);
}

}  // namespace
}  // namespace cairva::wire::json
