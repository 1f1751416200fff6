// Where each API's usage object keeps its counts (SPEC §5, SPEC-APIS §2 "booked input ←").
#pragma once

#include <string_view>

namespace cairva::wire {

struct UsageFields {
  std::string_view input;   // booked as input
  std::string_view output;  // booked as output; empty: the API produces none (booked 0)
};

inline constexpr UsageFields chat_usage_fields{"prompt_tokens", "completion_tokens"};
inline constexpr UsageFields responses_usage_fields{"input_tokens", "output_tokens"};
inline constexpr UsageFields embeddings_usage_fields{"prompt_tokens", {}};

}  // namespace cairva::wire
