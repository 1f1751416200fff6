#include "core/estimate.h"

#include <limits>

#include "base/assert.h"
#include "core/limits.h"

namespace cairva::core {

int64_t input_estimate(const PromptFacts& facts) {
  CAIRVA_ASSERT(facts.chars >= 0 && facts.items >= 0 && facts.media >= 0 && facts.tokens >= 0);
  const int64_t chars_tokens =
      facts.chars / estimate_chars_per_token + (facts.chars % estimate_chars_per_token != 0);
  // No overflow: every count is bounded by the body's bytes (16 MiB at most).
  return chars_tokens + facts.tokens + estimate_tokens_per_message * facts.items +
         estimate_tokens_per_request + media_part_tokens_estimate * facts.media;
}

int64_t per_choice_limit(const OutputRequest& req, int64_t default_max_tokens) {
  if (req.max_completion_tokens) return *req.max_completion_tokens;
  if (req.max_tokens) return *req.max_tokens;
  return default_max_tokens;
}

int64_t output_hold(const OutputRequest& req, int64_t default_max_tokens) {
  CAIRVA_ASSERT(req.n >= 1);
  int64_t hold = 0;
  // A client may send absurd limits; the product saturates instead of overflowing, and
  // admission then lowers the hold to what remains.
  if (__builtin_mul_overflow(per_choice_limit(req, default_max_tokens), req.n, &hold)) {
    return std::numeric_limits<int64_t>::max();
  }
  return hold;
}

}  // namespace cairva::core
