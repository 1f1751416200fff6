// The admin CLI's HTTP client: one call to the admin API, blocking the caller until it ends
// or its deadline passes. Kept to one translation unit because Beast is slow to compile.
#pragma once

#include <string>

#include "base/result.h"

namespace cairva::cli {

// The whole call (name resolution, connect, TLS handshake, send, receive) must finish
// within this unless the call says otherwise (`--admin-timeout`).
inline constexpr int admin_call_timeout_s = 30;
inline constexpr int admin_call_timeout_s_max = 3600;
// `cairva backup`: the copy is made while the call waits (2.8 s for a store of a million
// requests, 541 MB, on this project's 2-core machine), so its default leaves room for a
// store hundreds of times larger.
inline constexpr int backup_call_timeout_s = 1800;
static_assert(backup_call_timeout_s <= admin_call_timeout_s_max);

struct HttpCall {
  std::string method;  // "GET", "POST", "DELETE"
  std::string target;  // "/admin/v1/…?…", appended to the admin URL's path
  std::string body;    // JSON; empty for none
  int timeout_s = admin_call_timeout_s;
};

struct HttpReply {
  int status = 0;
  std::string body;
};

// Admin answers are pages of at most a thousand rows.
inline constexpr size_t admin_reply_bytes_max = size_t{16} << 20;

// Sends `call` to `admin_url` (http://HOST:PORT[/prefix], or https:// for an admin API
// behind a TLS proxy: the certificate is verified for HOST) with `Authorization: Bearer
// <token>`. Any HTTP status is a reply; only a failure to reach the API or a malformed
// answer is an error (ErrorCode::provider_unavailable, message saying what failed).
Result<HttpReply> admin_http(const std::string& admin_url, const std::string& token,
                             const HttpCall& call);

}  // namespace cairva::cli
