// The SPEC's error codes, each with its HTTP status and wire string, in one table.
#pragma once

#include <cstdint>
#include <string_view>

namespace cairva {

// Every error code the product answers with (SPEC §3, §6, §7). The wire string is
// both the error body's "type" and "code".
enum class ErrorCode : uint8_t {
  invalid_request,        // 400
  model_not_allowed,      // 400
  unsupported_api,        // 400 (a path of the other provider dialect, SPEC-APIS §1)
  invalid_api_key,        // 401
  invalid_admin_token,    // 401
  allocation_depleted,    // 402
  allocation_exhausted,   // 402
  allocation_not_active,  // 403
  allocation_expired,     // 403
  not_found,              // 404
  method_not_allowed,     // 405
  request_timeout,        // 408
  conflict,               // 409 (admin: a state change the entity's state forbids)
  not_pending,            // 409
  request_too_large,      // 413
  headers_too_large,      // 431
  rate_limited,           // 429
  internal_error,         // 500
  provider_unavailable,   // 502
  store_unavailable,      // 503
  provider_timeout,       // 504
};

inline constexpr int error_code_count = static_cast<int>(ErrorCode::provider_timeout) + 1;

// The HTTP status that answers `code`.
int http_status(ErrorCode code);
// The wire string ("rate_limited", ...).
std::string_view wire_name(ErrorCode code);

}  // namespace cairva
