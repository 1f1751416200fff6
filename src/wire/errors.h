// The error body of every failure the gateway answers itself (SPEC §6):
// {"error":{"type":"<code>","code":"<code>","message":"...","limit":"..."}}.
#pragma once

#include <string>
#include <string_view>

#include "base/error_code.h"

namespace cairva::wire {

// `limit` is written only for ErrorCode::rate_limited, and only when not empty. The
// message is JSON-escaped; bytes that are not valid UTF-8 become U+FFFD so the body is
// always valid JSON.
std::string error_body(ErrorCode code, std::string_view message, std::string_view limit = {});

// `text` as a JSON string literal, quotes included, escaped as error_body escapes it.
std::string json_quoted(std::string_view text);

}  // namespace cairva::wire
