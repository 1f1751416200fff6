// The error body of every failure the gateway answers itself, in the buyer's dialect:
// OpenAI's (SPEC §6) {"error":{"type":"<code>","code":"<code>","message":"...","limit":"..."}}
// everywhere but the Anthropic paths, which get Anthropic's (SPEC-APIS §4)
// {"type":"error","error":{"type":"<anthropic type>","message":"...","code":"<code>"}}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/error_code.h"

namespace cairva::wire {

// The shape a path's errors take: the API dialect its clients speak (SPEC-APIS §1, §4).
enum class Dialect : uint8_t {
  openai,     // every path but the Anthropic ones
  anthropic,  // /v1/messages and /v1/messages/count_tokens
};

// Anthropic's error type for an HTTP status (SPEC-APIS §4): 400 invalid_request_error, 401
// authentication_error, 402 billing_error, 403 permission_error, 404 not_found_error, 413
// request_too_large, 429 rate_limit_error, 504 timeout_error; any other 5xx api_error, any
// other 4xx invalid_request_error (431 request_too_large, 408 timeout_error).
std::string_view anthropic_error_type(int status);

// The Anthropic shape of an error answered with HTTP `status` (usually http_status(code);
// a busy gateway answers rate_limited with 503): the type from anthropic_error_type(status),
// the code and `limit` as error_body writes them, so the Anthropic SDKs raise their usual
// error class and a buyer still reads the gateway's code.
std::string anthropic_error_body(int status, ErrorCode code, std::string_view message,
                                 std::string_view limit = {});

// `limit` is written only for ErrorCode::rate_limited, and only when not empty. The
// message is JSON-escaped; bytes that are not valid UTF-8 become U+FFFD so the body is
// always valid JSON.
std::string error_body(ErrorCode code, std::string_view message, std::string_view limit = {});

// `text` as a JSON string literal, quotes included, escaped as error_body escapes it.
std::string json_quoted(std::string_view text);

}  // namespace cairva::wire
