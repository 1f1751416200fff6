// The hold's two halves (SPEC §4): the input estimate and the output hold.
// The wire layer counts characters and messages; this file owns the arithmetic.
#pragma once

#include <cstdint>
#include <optional>

namespace cairva::core {

// Facts the wire layer reads out of a request's body for SPEC §4's input estimate (one
// rule for every API; SPEC-APIS §2 says what `items` is per API).
struct PromptFacts {
  int64_t chars = 0;  // code points of every key and string value but the top-level model and media
  int64_t items = 0;  // entries of `messages` (chat), of `input` (responses, embeddings)
  int64_t media = 0;  // media payloads, each estimated at media_part_tokens_estimate
  int64_t tokens = 0;  // tokens counted exactly (embeddings token arrays), not as chars
  friend bool operator==(const PromptFacts&, const PromptFacts&) = default;
};

// ceil(chars / 3) + tokens + 4 * items + 8 + 1600 * media.
int64_t input_estimate(const PromptFacts& facts);

// The output limits a request asked for.
struct OutputRequest {
  std::optional<int64_t> max_completion_tokens;  // wins over max_tokens
  std::optional<int64_t> max_tokens;
  int64_t n = 1;  // >= 1
};

// Per-choice output limit: max_completion_tokens, else max_tokens, else `default_max_tokens`.
int64_t per_choice_limit(const OutputRequest& req, int64_t default_max_tokens);

// Output hold = per-choice limit * n.
int64_t output_hold(const OutputRequest& req, int64_t default_max_tokens);

}  // namespace cairva::core
