#include "base/error_code.h"

#include <array>

namespace cairva {
namespace {

struct Row {
  ErrorCode code;
  int status;
  std::string_view name;
};

// Declared in enum order; the static_assert below keeps the two in step.
constexpr std::array<Row, error_code_count> kTable{{
    {ErrorCode::invalid_request, 400, "invalid_request"},
    {ErrorCode::model_not_allowed, 400, "model_not_allowed"},
    {ErrorCode::unsupported_api, 400, "unsupported_api"},
    {ErrorCode::invalid_api_key, 401, "invalid_api_key"},
    {ErrorCode::invalid_admin_token, 401, "invalid_admin_token"},
    {ErrorCode::allocation_depleted, 402, "allocation_depleted"},
    {ErrorCode::allocation_exhausted, 402, "allocation_exhausted"},
    {ErrorCode::allocation_not_active, 403, "allocation_not_active"},
    {ErrorCode::allocation_expired, 403, "allocation_expired"},
    {ErrorCode::not_found, 404, "not_found"},
    {ErrorCode::method_not_allowed, 405, "method_not_allowed"},
    {ErrorCode::request_timeout, 408, "request_timeout"},
    {ErrorCode::conflict, 409, "conflict"},
    {ErrorCode::not_pending, 409, "not_pending"},
    {ErrorCode::request_too_large, 413, "request_too_large"},
    {ErrorCode::headers_too_large, 431, "headers_too_large"},
    {ErrorCode::rate_limited, 429, "rate_limited"},
    {ErrorCode::internal_error, 500, "internal_error"},
    {ErrorCode::provider_unavailable, 502, "provider_unavailable"},
    {ErrorCode::store_unavailable, 503, "store_unavailable"},
    {ErrorCode::provider_timeout, 504, "provider_timeout"},
}};

constexpr bool table_in_enum_order() {
  for (int i = 0; i < error_code_count; ++i) {
    if (static_cast<int>(kTable[i].code) != i) return false;
  }
  return true;
}
static_assert(table_in_enum_order(), "kTable rows must follow ErrorCode's order");

}  // namespace

int http_status(ErrorCode code) { return kTable[static_cast<int>(code)].status; }
std::string_view wire_name(ErrorCode code) { return kTable[static_cast<int>(code)].name; }

}  // namespace cairva
