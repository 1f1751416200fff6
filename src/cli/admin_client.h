// The admin CLI's HTTP client: one blocking call to the admin API. Kept to one translation
// unit because Beast is slow to compile.
#pragma once

#include <string>

#include "base/result.h"

namespace cairva::cli {

struct HttpCall {
  std::string method;  // "GET", "POST", "DELETE"
  std::string target;  // "/admin/v1/…?…", appended to the admin URL's path
  std::string body;    // JSON; empty for none
};

struct HttpReply {
  int status = 0;
  std::string body;
};

// The whole exchange (connect, send, receive) must finish within this.
inline constexpr int admin_call_timeout_s = 30;
// Admin answers are pages of at most a thousand rows.
inline constexpr size_t admin_reply_bytes_max = size_t{16} << 20;

// Sends `call` to `admin_url` (http://HOST:PORT[/prefix], or https:// for an admin API
// behind a TLS proxy: the certificate is verified for HOST) with `Authorization: Bearer
// <token>`. Any HTTP status is a reply; only a failure to reach the API or a malformed
// answer is an error (ErrorCode::provider_unavailable, message saying what failed).
Result<HttpReply> admin_http(const std::string& admin_url, const std::string& token,
                             const HttpCall& call);

}  // namespace cairva::cli
