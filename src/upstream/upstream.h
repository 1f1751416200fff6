// The upstream seam: what the gateway flow needs of a provider client. Send a request,
// get the response's head; then read its body whole, or its stream piece by piece.
// UpstreamPool (connection.h) is the real client over Beast; upstream/fake_upstream.h is a
// scripted fake for in-process tests of the flow. Nothing here names Beast: the flow
// compiles without the client's heavy headers.
//
// Thread safety: none; one client per event loop, one Response per request.
#pragma once

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>

#include "base/result.h"
#include "http/executor.h"
#include "upstream/provider_endpoint.h"

namespace cairva::upstream {

// One request to a provider. The views must outlive the Response (the body is sent from
// where it lies, never copied, and a retry sends it again).
// A request header passed on to the provider (e.g. anthropic-version).
struct Header {
  std::string_view name;
  std::string_view value;
};

struct Request {
  std::string_view path;        // e.g. ProviderEndpoint::chat_path
  std::string_view request_id;  // sent as x-cairva-request-id
  std::string_view body;        // JSON; empty for a GET or DELETE
  // Bound on connecting, sending and receiving the response's head.
  std::chrono::steady_clock::duration head_timeout{};
  std::string_view method = "POST";
  std::span<const Header> headers;  // passed on as they are, after the gateway's own
};

// The response fields the flow reads.
enum class Field : uint8_t {
  request_id,            // x-request-id: a booking key when the body has no id
  processing_ms,         // openai-processing-ms: passed on to the client
  retry_after,           // Retry-After: kept on a provider 429
  anthropic_request_id,  // request-id: Anthropic's, a booking key when the body has no id; passed
                         // on
};
inline constexpr size_t field_count = 4;

// Why a read of the body stopped.
enum class ReadStatus : uint8_t {
  ok,         // bytes arrived (or the body is complete)
  timeout,    // the deadline passed
  too_large,  // the body is over the bound it was read with
  cut,        // the connection failed or closed before the body ended
};

// A provider's response whose head has arrived.
class Response {
 public:
  // A read's outcome as the client's operations yield it; status_of() names it.
  using Outcome = std::tuple<boost::system::error_code, std::size_t>;

  virtual ~Response() = default;

  virtual unsigned status() const = 0;
  // A kept field's value; empty when the provider sent none.
  virtual std::string_view field(Field f) const = 0;
  virtual bool has_field(Field f) const = 0;
  // Whether the connection may carry another request once this body is read whole.
  virtual bool keep_alive() const = 0;
  // True once the whole body has been read.
  virtual bool complete() const = 0;
  // The body read so far or, streaming, since the caller last cleared it. The caller may
  // move it out or clear it; the client appends to it.
  virtual std::string& body() = 0;

  // Every later read fails with ReadStatus::timeout after now + d.
  virtual void expires_after(std::chrono::steady_clock::duration d) = 0;

  // Reading the body whole, at most `bytes_max`: returns its status at once when what
  // has arrived already decides it (the body is in, or announced over the bound), else
  // nullopt: then co_await read_body(). Two calls rather than one coroutine: a body that
  // came with its head costs no coroutine frame.
  virtual std::optional<ReadStatus> body_buffered(size_t bytes_max) = 0;
  virtual http::Task<Outcome> read_body() = 0;

  // Streaming: body() holds at most `bytes` at a time; each read_some() brings what the
  // provider sent next (ok with an empty body() when only framing arrived).
  virtual void hold_at_most(size_t bytes) = 0;
  virtual http::Task<Outcome> read_some() = 0;

  virtual ReadStatus status_of(const Outcome& o) const = 0;
};

// A provider client.
class Upstream {
 public:
  virtual ~Upstream() = default;
  // Sends `req` to `provider` and reads the response's head. Errors are values:
  // ErrorCode::provider_timeout (no head within req.head_timeout) or
  // ErrorCode::provider_unavailable (no connection, or it failed), with the gateway's
  // own message naming the provider.
  virtual http::Task<Result<std::unique_ptr<Response>>> send(const ProviderEndpoint& provider,
                                                             const Request& req) = 0;
  // Takes back a response read whole whose connection may be reused (keep_alive()).
  // Dropping a Response instead closes its connection.
  virtual void release(const ProviderEndpoint& provider, std::unique_ptr<Response> response) = 0;
};

}  // namespace cairva::upstream
