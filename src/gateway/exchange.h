// ClientExchange: one request/response on a client connection, with the headers every
// response carries (SPEC §6): x-cairva-request-id always, x-ratelimit-* when the caller
// is authenticated (the reset ones from gateway/rate_headers.h), and anthropic-ratelimit-*
// beside them on the Anthropic paths. Used by the session loop and every API's flow.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/error_code.h"
#include "base/result.h"
#include "core/admission.h"
#include "gateway/open_requests.h"
#include "http/deadline.h"
#include "http/executor.h"
#include "http/message_head.h"
#include "store/rows.h"
#include "wire/errors.h"

namespace cairva::gateway {

struct ClientExchange {
  http::Socket& stream;
  http::Deadline& deadline;  // the connection's one timer
  unsigned version = 11;
  bool keep_alive = true;
  bool head_only = false;                        // a HEAD request: the response's body is not sent
  std::string request_id;                        // x-cairva-request-id
  std::string_view key_hash;                     // the request's key's, while it is served
  std::optional<core::AllocationSnapshot> rate;  // for x-ratelimit-* headers
  int status_sent = 0;                           // for logs and metrics
  // The error shape (and, for anthropic, the anthropic-ratelimit-* headers) of the path's
  // dialect (SPEC-APIS §4), set from the route before any answer.
  wire::Dialect dialect = wire::Dialect::openai;
  // Set while the process drains (serve.cpp): every response then closes its connection.
  // Null: never.
  const std::atomic<bool>* closing = nullptr;
  // The event loop's requests being forwarded, for the end of a drain (null: none kept).
  OpenRequests* open_requests = nullptr;
  // For the access log line (gateway/access_log.h).
  std::string allocation_id;
  std::string_view outcome = "-";  // "booked", "usage_pending", "failed", or an error code
  core::Tokens booked;
  std::string model;                // the request's, once read (only while the log is on)
  std::string provider_request_id;  // the one its settlement recorded (likewise)

  // Whether the connection stays open after the response being sent: keep_alive, which
  // turns false once the process drains, so that the response says Connection: close.
  bool keep_open() {
    if (keep_alive && closing != nullptr && closing->load(std::memory_order_relaxed))
      keep_alive = false;
    return keep_alive;
  }

  // A response head with x-cairva-request-id and, when known, the x-ratelimit-* headers.
  http::MessageHead head(int status) const;
  // Writes `head` (from head()) and a JSON body. Returns false when the connection is lost
  // or must close.
  http::Task<bool> send_json(http::MessageHead head, std::string body);
  http::Task<bool> send_json(int status, std::string body) {
    return send_json(head(status), std::move(body));
  }
  // Writes an error in the exchange's dialect; `retry_after_s` > 0 adds Retry-After (a
  // store_unavailable always has one), `retry_after_ms` > 0 adds retry-after-ms (the
  // OpenAI and Vercel AI SDKs read it before Retry-After). `message` is the buyer's to
  // read: never an internal error's text (send_store_error).
  http::Task<bool> send_error(ErrorCode code, std::string_view message, std::string_view limit = {},
                              int retry_after_s = 0, int64_t retry_after_ms = 0);
  // Answers a failed store call (SPEC §6): a missing, unknown or revoked key
  // (invalid_api_key) is 401; any other failure is the store's outage, never the key's:
  // 503 store_unavailable with Retry-After and the gateway's own message. The store's own
  // text (libpq's names the database's host and port) goes to the log only.
  http::Task<bool> send_store_error(const Error& e);
  // "cairva: request <id>: <what>: <detail>" on stderr, for operators; control bytes in
  // `detail` are shown as '?' so that it cannot forge a line.
  void log_error(std::string_view what, std::string_view detail) const;
  // 503 with Retry-After: the gateway itself is at `limit` (a resource of the process, not
  // of the caller's allocation). The body's code is rate_limited, naming the limit.
  http::Task<bool> send_busy(std::string_view limit, std::string_view message, int retry_after_s);
  // "100 Continue" to a client waiting for it before sending its body. False when the
  // connection is lost.
  http::Task<bool> send_continue();
  // An error body in the exchange's dialect, for an answer with HTTP `status`.
  std::string error_body(int status, ErrorCode code, std::string_view message,
                         std::string_view limit = {}) const;
};

}  // namespace cairva::gateway
