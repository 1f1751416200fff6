#include "core/estimate.h"

#include <limits>

#include "base/assert.h"
#include "core/limits.h"

namespace cairva::core {

int64_t input_estimate(const PromptFacts& facts) {
  CAIRVA_ASSERT(facts.chars >= 0 && facts.messages >= 0);
  const int64_t chars_tokens =
      facts.chars / estimate_chars_per_token + (facts.chars % estimate_chars_per_token != 0);
  return chars_tokens + estimate_tokens_per_message * facts.messages +
         estimate_tokens_per_request;
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
