// The public listener's connection loop: read the header under size and time limits,
// route (404, 405), authenticate (401), take the body's memory (413, 503), read the body,
// then dispatch. A connection closed after a refusal with its body unread discards what
// the client still sends before closing (http/linger.h).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "admin/usage_series.h"
#include "base/ids.h"
#include "gateway/chat.h"
#include "gateway/console_http.h"
#include "gateway/embeddings.h"
#include "gateway/exchange.h"
#include "gateway/flow.h"
#include "gateway/gateway.h"
#include "gateway/messages.h"
#include "gateway/passthrough.h"
#include "gateway/responses.h"
#include "gateway/store_await.h"
#include "http/buffered_parse.h"
#include "http/connections.h"
#include "http/limits.h"
#include "http/linger.h"
#include "http/message_reader.h"
#include "render/entity_json.h"
#include "upstream/connection.h"
#include "wire/api_paths.h"
#include "wire/limits.h"

namespace cairva::gateway {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using http::Task;
using http::task_nothrow;
constexpr std::string_view bearer_prefix = "Bearer ";

// Every public path. The API routes are grouped by the provider dialect that serves them
// (SPEC-APIS §1); models is served by both.
enum class Route {
  chat,              // POST /v1/chat/completions
  responses,         // POST /v1/responses
  response_object,   // GET, DELETE /v1/responses/{id}; GET /v1/responses/{id}/input_items
  embeddings,        // POST /v1/embeddings
  models,            // GET /v1/models
  messages,          // POST /v1/messages
  count_tokens,      // POST /v1/messages/count_tokens
  allocation,        // GET /v1/allocations/current
  allocation_usage,  // GET /v1/allocations/current/usage (SPEC-CONSOLE §2)
  healthz,           // GET, HEAD /healthz
  console,           // GET, HEAD / and /console/... (gateway/console_http.h)
  unknown,
};

// A billable route: the next store call after authentication is its admission.
bool is_billable(Route r) {
  return r == Route::chat || r == Route::responses || r == Route::embeddings ||
         r == Route::messages;
}

// The dialect a route belongs to; nullopt for a route every provider serves.
std::optional<config::ProviderKind> dialect_of(Route r) {
  switch (r) {
    case Route::chat:
    case Route::responses:
    case Route::response_object:
    case Route::embeddings:
      return config::ProviderKind::openai;
    case Route::messages:
    case Route::count_tokens:
      return config::ProviderKind::anthropic;
    default:
      return std::nullopt;
  }
}

Route route_of(std::string_view target, bhttp::verb method, bool& method_ok) {
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const bool post = method == bhttp::verb::post;
  const bool get = method == bhttp::verb::get;
  struct Exact {
    std::string_view path;
    Route route;
    bool ok;
  };
  for (const Exact& e :
       {Exact{"/v1/chat/completions", Route::chat, post},
        Exact{"/v1/responses", Route::responses, post},
        Exact{"/v1/embeddings", Route::embeddings, post}, Exact{"/v1/models", Route::models, get},
        Exact{"/v1/messages", Route::messages, post},
        Exact{"/v1/messages/count_tokens", Route::count_tokens, post},
        Exact{"/v1/allocations/current", Route::allocation, get},
        Exact{"/v1/allocations/current/usage", Route::allocation_usage, get},
        Exact{"/healthz", Route::healthz, get || method == bhttp::verb::head}}) {
    if (path == e.path) {
      method_ok = e.ok;
      return e.route;
    }
  }
  if (path.starts_with(wire::responses_prefix) && path.size() > wire::responses_prefix.size()) {
    const std::string_view rest = path.substr(wire::responses_prefix.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) {
      method_ok = get || method == bhttp::verb::delete_;
      return Route::response_object;
    }
    if (slash > 0 && rest.substr(slash) == "/input_items") {
      method_ok = get;
      return Route::response_object;
    }
  }
  if (console::is_console_path(path)) {
    method_ok = get || method == bhttp::verb::head;
    return Route::console;
  }
  method_ok = false;
  return Route::unknown;
}

// The shape of the gateway's own answers (SPEC-APIS §4): Anthropic's on the two Messages
// paths, OpenAI's on every other path, whoever the caller is (the SDKs pick their error
// class by status, so an unserved Anthropic path still raises NotFoundError).
wire::Dialect error_dialect(Route route) {
  const auto dialect = dialect_of(route);
  return dialect && *dialect == config::ProviderKind::anthropic ? wire::Dialect::anthropic
                                                                : wire::Dialect::openai;
}

// The paths a provider dialect serves, for the unsupported_api message.
std::string_view paths_of(config::ProviderKind kind) {
  return kind == config::ProviderKind::anthropic
             ? "POST /v1/messages, POST /v1/messages/count_tokens, GET /v1/models"
             : "POST /v1/chat/completions, POST /v1/responses, POST /v1/embeddings, GET "
               "/v1/models, "
               "GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items";
}

// What an Anthropic path passes on of the client's request head (gateway/messages.h).
AnthropicFields anthropic_fields(const http::RequestReader& request) {
  const std::string_view target = request.target();
  const auto q = target.find('?');
  return {request.anthropic_version(), request.anthropic_beta(),
          q == std::string_view::npos ? std::string_view() : target.substr(q)};
}

// Told to a client whose body does not fit in the body budget: retry in this many seconds,
// by when bodies in flight have usually been forwarded.
constexpr int body_budget_retry_after_s = 1;

bool has_body(const http::RequestReader& p) {
  return p.chunked() || (p.content_length() && *p.content_length() > 0);
}

// What the session loop keeps of its connection between requests.
struct ConnectionState {
  http::Connection& connection;
  OpenRequests* open_requests;  // the event loop's
  bool first_request = true;
  std::string client_text;  // the peer's address as the access log writes it, once
  // The connection closes with request bytes unread (a refused body, or bytes after a
  // malformed header): discard them before closing.
  bool unread = false;
};

// Waits for the first byte of a request, idle (the connection may be shed meanwhile), with
// `wait_s`; then gives the rest of the header header_read_timeout_s: an idle keep-alive
// connection is cheap, a slow sender is not.
Task<void> read_header(http::Socket& stream, http::Deadline& deadline, beast::flat_buffer& buffer,
                       http::RequestReader& parser, http::Connection& connection, int64_t wait_s,
                       bool& got_bytes, boost::system::error_code& ec) {
  got_bytes = buffer.size() > 0;
  if (!got_bytes) {
    deadline.expires_after(std::chrono::seconds(wait_s));
    size_t n = 0;
    {
      http::Connection::Idle idle(connection);
      std::tie(ec, n) = co_await stream.async_read_some(buffer.prepare(4096), task_nothrow);
    }
    if (ec) co_return;
    buffer.commit(n);
    got_bytes = true;
  }
  deadline.expires_after(std::chrono::seconds(http::header_read_timeout_s));
  if (http::parse_buffered(parser, buffer, true, ec)) co_return;
  std::tie(ec, std::ignore) =
      co_await bhttp::async_read_header(stream, buffer, parser, task_nothrow);
  if (ec && deadline.expired()) ec = beast::error::timeout;
}

// The last key a connection sent, with its hash: clients send the same key on every
// request of a keep-alive connection, and hashing it again is a visible share of the event
// loop's instructions per request (bench/instructions.sh). Only the hash is reused; the store
// still decides per request (revoked, allocation). Lives with its connection, in memory.
struct KeyHashCache {
  std::string secret;
  std::string hash;

  const std::string& hash_of(std::string_view key) {
    if (hash.empty() || !constant_time_equal(key, secret)) {
      secret.assign(key);
      hash = hash_secret(key);
    }
    return hash;
  }
};

// The buyer's key (SPEC-APIS §1): `Authorization: Bearer cv_…`, else `x-api-key: cv_…`
// (Anthropic's SDKs send one or the other, by version); empty when neither carries one.
std::string_view api_key_of(const http::RequestReader& request) {
  const std::string_view authorization = request.authorization();
  if (authorization.starts_with(bearer_prefix) && authorization.size() > bearer_prefix.size()) {
    return authorization.substr(bearer_prefix.size());
  }
  return request.x_api_key();
}

// `for_admission`: the request's next store call is its admission (a billable call),
// and every answer before it goes through refuse_before_admission.
Task<Result<store::KeyGrant>> authenticate(const Gateway& gw, KeyHashCache& keys,
                                           ClientExchange& ex, std::string_view key,
                                           bool for_admission) {
  if (key.empty()) {
    co_return make_error(ErrorCode::invalid_api_key,
                         "missing API key: send Authorization: Bearer cv_... or x-api-key: cv_...");
  }
  const std::string& hash = keys.hash_of(key);
  ex.key_hash = hash;
  auto start = [&gw, &hash, for_admission](store::Callback<store::KeyGrant> cb) {
    if (for_admission) {
      gw.store.authenticate_for_admission(hash, std::move(cb));
    } else {
      gw.store.authenticate(hash, std::move(cb));
    }
  };
  co_return co_await await_store<store::KeyGrant>(start);
}

Task<bool> allocation_current(const Gateway& gw, ClientExchange& ex, const store::KeyGrant& grant) {
  auto start = [&gw, &grant](store::Callback<store::AllocationStatus> cb) {
    gw.store.allocation_status(grant.allocation_id, std::move(cb));
  };
  auto status = co_await await_store<store::AllocationStatus>(start);
  if (!status) co_return co_await ex.send_store_error(status.error());
  ex.rate = status->snapshot;
  co_return co_await ex.send_json(200, render::allocation_json(*status));
}

// The calling key's usage series, read off this loop by the store (Store::usage_series).
Task<bool> allocation_usage(const Gateway& gw, ClientExchange& ex, const store::KeyGrant& grant,
                            std::string_view target) {
  auto req = admin::usage_request(admin::query_of(target), grant.allocation_id, gw.clock.now());
  if (!req) co_return co_await ex.send_error(req.error().code, req.error().message);
  auto start = [&gw, &req](store::Callback<store::UsageSeries> cb) {
    gw.store.usage_series(req->query, std::move(cb));
  };
  auto series = co_await await_store<store::UsageSeries>(start);
  if (!series) co_return co_await ex.send_store_error(series.error());
  co_return co_await ex.send_json(200, admin::usage_series_json(*series, req->bucket));
}

// Writes the exchange's access log line when the request is done, however it ended.
struct AccessLogLine {
  const ClientExchange& ex;
  const Gateway& gw;
  ConnectionState& state;  // its connection's
  int64_t started_us;
  std::string_view method;  // the parser's, which outlives this line
  std::string_view path;    // the target without its query string, which may hold secrets
  ~AccessLogLine() {
    if (gw.access_log == nullptr || ex.request_id.empty()) return;
    if (state.client_text.empty()) state.client_text = state.connection.client().to_string();
    AccessRecord r;
    r.time = gw.clock.now();
    r.client = state.client_text;
    r.method = method;
    r.path = path;
    r.status = ex.status_sent;
    r.allocation_id = ex.allocation_id;
    r.request_id = ex.request_id;
    r.provider_request_id = ex.provider_request_id;
    r.model = ex.model;
    r.booked = ex.booked;
    r.outcome = ex.outcome;
    r.latency_us = gw.clock.monotonic_micros() - started_us;
    gw.access_log->write(r);
  }
};

// Serves one request. Returns false when the connection must close.
Task<bool> serve_one(const Gateway& gw, upstream::UpstreamPool& pool, http::Socket& stream,
                     http::Deadline& deadline, beast::flat_buffer& buffer, std::string& head_text,
                     KeyHashCache& keys, ConnectionState& state) {
  http::RequestReader hp(head_text);
  hp.header_limit(static_cast<std::uint32_t>(http::request_header_bytes_max));
  hp.body_limit(boost::none);  // checked after authentication: 401 comes before 413
  bool got_bytes = false;
  boost::system::error_code ec;
  const int64_t wait_s =
      state.first_request ? gw.config.first_byte_timeout_s : http::idle_timeout_s;
  state.first_request = false;
  co_await read_header(stream, deadline, buffer, hp, state.connection, wait_s, got_bytes, ec);
  ClientExchange ex{stream, deadline};
  ex.closing = gw.draining;
  ex.open_requests = state.open_requests;
  AccessLogLine log_line{ex, gw, state, gw.clock.monotonic_micros(), {}, {}};
  ex.keep_alive = false;
  if (ec) {
    if (!got_bytes || ec == bhttp::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset) {
      co_return false;
    }
    ex.request_id = new_time_ordered_id("req");
    if (ec == beast::error::timeout) {
      co_await ex.send_error(ErrorCode::request_timeout, "request headers not received in time");
      co_return false;
    }
    state.unread = true;  // the rest of what the client sent cannot be framed: discard it
    if (ec == bhttp::error::header_limit) {
      co_await ex.send_error(ErrorCode::headers_too_large, "request headers exceed 16 KiB");
    } else if (ec == bhttp::error::bad_transfer_encoding) {
      co_await ex.send_error(
          ErrorCode::invalid_request,
          "Transfer-Encoding must be chunked alone, without Content-Length (RFC 9112 section 6.1)");
    } else {
      co_await ex.send_error(ErrorCode::invalid_request, "malformed HTTP request: " + ec.message());
    }
    co_return false;
  }
  ex.version = hp.version();
  ex.head_only = hp.method() == bhttp::verb::head;
  ex.keep_alive = hp.keep_alive() && !has_body(hp);  // reset below once the body is read
  state.unread = has_body(hp);                       // until the body is read
  ex.request_id = new_time_ordered_id("req");
  log_line.method = hp.method_text();
  log_line.path = hp.target().substr(0, hp.target().find('?'));
  bool method_ok = false;
  const Route route = route_of(hp.target(), hp.method(), method_ok);
  // Every answer from here on, 404 to 503, is in the path's dialect (SPEC-APIS §4).
  ex.dialect = error_dialect(route);
  if (route == Route::unknown)
    co_return co_await ex.send_error(ErrorCode::not_found,
                                     "unknown path " + std::string(hp.target()));
  if (!method_ok) {
    co_return co_await ex.send_error(
        ErrorCode::method_not_allowed,
        std::string(hp.method_text()) + " is not allowed on " + std::string(hp.target()));
  }
  // A draining process tells load balancers to move away (its listener is closed already).
  if (route == Route::healthz && gw.is_draining())
    co_return co_await ex.send_json(503, R"({"status":"draining"})");
  if (route == Route::healthz) co_return co_await ex.send_json(200, R"({"status":"ok"})");
  if (route == Route::console) co_return co_await send_console(ex, hp.method(), hp.target());

  auto grant = co_await authenticate(gw, keys, ex, api_key_of(hp), is_billable(route));
  // A store outage is not a revoked key: 503, never 401 (send_store_error).
  if (!grant) co_return co_await ex.send_store_error(grant.error());
  ex.allocation_id = grant->allocation_id;
  ex.rate = core::AllocationSnapshot{};
  ex.rate->terms.limits = grant->limits;  // refined by admission; enough for early errors
  if (route == Route::allocation) co_return co_await allocation_current(gw, ex, *grant);
  if (route == Route::allocation_usage)
    co_return co_await allocation_usage(gw, ex, *grant, hp.target());
  // A path of the other dialect counts toward nothing (SPEC-APIS §1).
  if (const auto dialect = dialect_of(route)) {
    const upstream::ProviderEndpoint* provider = gw.find_provider(grant->provider);
    if (provider != nullptr && provider->kind != *dialect) {
      co_return co_await refuse_before_admission(
          gw, ex, *grant, ErrorCode::unsupported_api,
          "this allocation's provider does not serve " + std::string(hp.method_text()) + " " +
              std::string(hp.target().substr(0, hp.target().find('?'))) + "; it serves " +
              std::string(paths_of(provider->kind)));
    }
  }

  if (hp.content_length() && *hp.content_length() > http::request_body_bytes_max) {
    co_return co_await refuse_before_admission(gw, ex, *grant, ErrorCode::request_too_large,
                                               "request body exceeds 16 MiB");
  }
  hp.body_limit(http::request_body_bytes_max);  // no body byte parsed yet: Beast allows it
  // The body's memory comes from the process's budget as it is read (released when the
  // request is done): an announced length all at once, since it is reserved now.
  http::BodyLease lease(gw.body_budget);
  const std::string_view busy = "the gateway holds as many request bodies as it may; retry shortly";
  if (hp.content_length()) {
    // The slack lets inspection parse the body where it lies instead of copying it.
    const size_t room = *hp.content_length() + wire::in_place_slack_bytes;
    if (!lease.grow_to(room)) {
      co_return co_await ex.send_busy("body_bytes_in_flight", busy, body_budget_retry_after_s);
    }
    hp.body().reserve(room);
  } else {
    hp.body_lease(&lease);
  }
  // A client that waits for 100 Continue before its body gets it now that the body will be
  // read (RFC 9110 section 10.1.1; never to an HTTP/1.0 client); every refusal above came
  // instead of it.
  if (hp.expects_continue() && hp.version() >= 11 && buffer.size() == 0 && has_body(hp)) {
    if (!co_await ex.send_continue()) co_return false;
  }
  deadline.expires_after(std::chrono::seconds(http::body_read_timeout_s));
  if (!http::parse_buffered(hp, buffer, false, ec)) {
    std::tie(ec, std::ignore) = co_await bhttp::async_read(stream, buffer, hp, task_nothrow);
    if (ec && deadline.expired()) ec = beast::error::timeout;
  }
  if (ec == bhttp::error::body_limit) {
    co_return co_await refuse_before_admission(gw, ex, *grant, ErrorCode::request_too_large,
                                               "request body exceeds 16 MiB");
  }
  if (ec == http::body_budget_exhausted) {
    co_return co_await ex.send_busy("body_bytes_in_flight", busy, body_budget_retry_after_s);
  }
  state.unread = false;  // read, or the client is too slow or gone: nothing worth discarding
  if (ec == beast::error::timeout) {
    co_return co_await refuse_before_admission(gw, ex, *grant, ErrorCode::request_timeout,
                                               "request body not received in time");
  }
  if (ec) co_return false;
  ex.keep_alive = hp.keep_alive();
  switch (route) {
    case Route::chat:
      co_return co_await chat_completion(gw, pool, ex, *grant, std::move(hp.body()));
    case Route::responses:
      co_return co_await responses_create(gw, pool, ex, *grant, std::move(hp.body()));
    case Route::embeddings:
      co_return co_await embeddings_create(gw, pool, ex, *grant, std::move(hp.body()));
    case Route::models: {
      // An Anthropic provider answers only a call that names its API version (SPEC-APIS §1).
      const AnthropicHeaders anthropic(anthropic_fields(hp));
      const upstream::ProviderEndpoint* provider = gw.find_provider(grant->provider);
      std::span<const upstream::Header> forwarded;
      if (provider != nullptr && provider->kind == config::ProviderKind::anthropic) {
        forwarded = anthropic.span();
      }
      co_return co_await list_models(gw, pool, ex, *grant, hp.target(), forwarded);
    }
    case Route::response_object:
      co_return co_await response_object(gw, pool, ex, *grant, hp.method_text(), hp.target());
    case Route::messages:
      co_return co_await messages_create(gw, pool, ex, *grant, std::move(hp.body()),
                                         anthropic_fields(hp));
    case Route::count_tokens:
      co_return co_await messages_count_tokens(gw, pool, ex, *grant, std::move(hp.body()),
                                               anthropic_fields(hp));
    default:
      co_return co_await ex.send_error(ErrorCode::not_found,
                                       "unknown path " + std::string(hp.target()));
  }
}

Task<void> serve_connection(const Gateway& gw, upstream::UpstreamPool& pool, OpenRequests& open,
                            http::Socket socket, std::shared_ptr<http::Connection> connection) {
  http::Deadline deadline(socket);
  connection->on_shed([&socket] {
    boost::system::error_code ignored;
    socket.close(ignored);
  });
  beast::flat_buffer buffer;
  std::string head_text;  // a request's target and Authorization, reused
  KeyHashCache keys;
  ConnectionState state{*connection, &open};
  while (co_await serve_one(gw, pool, socket, deadline, buffer, head_text, keys, state)) {
  }
  if (connection->shed()) co_return;  // closed already
  boost::system::error_code ignored;
  socket.shutdown(http::Socket::shutdown_send, ignored);
  if (state.unread) {
    http::Connection::Idle idle(*connection);  // discarding is the first thing to give up
    co_await http::discard_until_closed(socket, buffer,
                                        [&deadline](auto d) { deadline.expires_after(d); });
  }
}

}  // namespace

// The listener's coroutine runs on the default executor type; the connection's own loop
// runs on the data path's, started once per connection.
net::awaitable<void> public_session(const Gateway& gw, upstream::UpstreamPool& pool,
                                    OpenRequests& open, net::ip::tcp::socket socket,
                                    std::shared_ptr<http::Connection> connection) {
  auto on_loop = http::rebind(std::move(socket), pool.executor());
  co_await net::co_spawn(
      pool.executor(), serve_connection(gw, pool, open, std::move(on_loop), std::move(connection)),
      net::use_awaitable);
}

}  // namespace cairva::gateway
