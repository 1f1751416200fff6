#include "wire/json.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

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

TEST(CountCodePoints, MatchesAByteByByteCountForShortTextsAtEveryOffset) {
  // Member names and short values: each length under two blocks from each start, so the
  // tail's overlapping loads see every split of a multi-byte sequence.
  const std::string text = "key_é你😀aé你😀bcdefé😀你gh😀😀é";
  for (size_t at = 0; at < 16; ++at) {
    for (size_t len = 0; at + len <= text.size() && len < 40; ++len) {
      const std::string copy = text.substr(at, len);
      EXPECT_EQ(count_code_points(copy), naive_code_points(copy)) << at << " " << len;
    }
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

// What count_string must agree with: simdjson unescaping the string (and its checks).
simdjson::error_code reference_count(const std::string& doc, int64_t& chars) {
  od::parser parser;
  const simdjson::padded_string padded(doc);
  od::document d;
  if (auto e = parser.iterate(padded).get(d)) return e;
  std::string_view s;
  if (auto e = d["k"].get_string().get(s)) return e;
  chars = count_code_points(s);
  return simdjson::SUCCESS;
}

simdjson::error_code counted(Scratch& scratch, const std::string& doc, int64_t& chars) {
  od::document d;
  if (auto e = scratch.iterate(doc).get(d)) return e;
  od::value v;
  if (auto e = d["k"].get(v)) return e;
  chars = 0;
  return count_string(v, chars);
}

TEST(CountString, AgreesWithSimdjsonUnescapingOnEveryEscape) {
  Scratch scratch;
  const std::vector<std::string> cases = {
      "",
      "plain",
      "a\\nb",
      "\\\"",
      "\\\\",
      "\\/",
      "\\b\\f\\n\\r\\t",
      "\\q",
      "\\x41",
      "\\'",
      "\\u0041",
      "\\u00e9",
      "\\u00E9",
      "\\u0000",
      "\\uFFFF",
      "\\u004",
      "\\u00G1",
      "\\u",
      "x\\u12",
      "\\ud83d\\ude00",
      "\\uD83D\\uDE00",
      "\\ud83d",
      "\\ud83dx",
      "\\ud83d\\u0041",
      "\\ud83d\\ud83d",
      "\\udbff\\udfff",
      "\\ude00",
      "\\udc00\\ud800",
      "\\ud800\\udc0",
      "\\ud800\\",
      "\\ud800\\n",
      "é\\n😀\\u00e9你",
      std::string(40, 'a') + "\\ud83d\\ude00" + std::string(40, 'b')};
  for (const std::string& c : cases) {
    const std::string doc = "{\"k\":\"" + c + "\"}";
    int64_t want = -1, got = -1;
    const auto want_e = reference_count(doc, want);
    EXPECT_EQ(counted(scratch, doc, got), want_e) << doc;
    if (want_e == simdjson::SUCCESS) {
      EXPECT_EQ(got, want) << doc;
    }
  }
  // Random strings of escape fragments, short and long (the sixteen-byte blocks, their tail).
  const std::vector<std::string> pieces = {
      "\\", "u", "d8", "D8", "dc", "DC", "00",  "3d",      "e9",      "0",   "f",    "G", "n",
      "\"", "/", "é",  "😀",  "x",  " ",  "\\u", "\\ud83d", "\\ude00", "\\n", "\\\\", "你"};
  const uint32_t seed = 20260611;
  std::mt19937 rng(seed);
  for (int i = 0; i < 40000; ++i) {
    std::string c;
    const size_t n = rng() % (i % 10 == 0 ? 200 : 12);
    for (size_t k = 0; k < n; ++k) c += pieces[rng() % pieces.size()];
    const std::string doc = "{\"k\":\"" + c + "\"}";
    int64_t want = -1, got = -1;
    const auto want_e = reference_count(doc, want);
    ASSERT_EQ(counted(scratch, doc, got), want_e) << doc << " seed " << seed;
    if (want_e == simdjson::SUCCESS) {
      ASSERT_EQ(got, want) << doc << " seed " << seed;
    }
  }
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
