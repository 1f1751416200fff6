// GET /v1/models answered from an agreement's `models` list (SPEC-APIS §3), in the list
// shape of the provider's dialect, so that each dialect's SDK reads it as its provider's.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cairva::wire {

// OpenAI: {"object":"list","data":[{"id","object":"model","created","owned_by"}…]}.
// `created_s` is Unix seconds.
std::string openai_model_list(std::span<const std::string> models, int64_t created_s,
                              std::string_view owned_by);

// Anthropic: {"data":[{"type":"model","id","display_name","created_at"}…],"has_more":false,
// "first_id","last_id"}. `created_at` is RFC 3339; the display name is the id.
std::string anthropic_model_list(std::span<const std::string> models, std::string_view created_at);

}  // namespace cairva::wire
