// The hold's two halves (SPEC §4): the input estimate and the output hold.
// The wire layer counts characters and messages; this file owns the arithmetic.
#pragma once

#include <cstdint>
#include <optional>

namespace cairva::core {

// Facts the wire layer reads out of a chat request.
struct PromptFacts {
  int64_t chars = 0;     // Unicode code points counted per SPEC §4
  int64_t messages = 0;  // entries in `messages`
  friend bool operator==(const PromptFacts&, const PromptFacts&) = default;
};

// ceil(chars / 3) + 4 * messages + 8.
int64_t input_estimate(const PromptFacts& facts);

// The output limits a request asked for.
struct OutputRequest {
  std::optional<int64_t> max_completion_tokens;  // wins over max_tokens
  std::optional<int64_t> max_tokens;
  int64_t n = 1;                                 // >= 1
};

// Per-choice output limit: max_completion_tokens, else max_tokens, else `default_max_tokens`.
int64_t per_choice_limit(const OutputRequest& req, int64_t default_max_tokens);

// Output hold = per-choice limit * n.
int64_t output_hold(const OutputRequest& req, int64_t default_max_tokens);

}  // namespace cairva::core
