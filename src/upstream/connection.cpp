#include "upstream/connection.h"

#include <openssl/ssl.h>

#include <array>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "http/limits.h"
#include "http/message_head.h"

namespace cairva::upstream {

std::unique_ptr<net::ssl::context> make_client_tls_context() {
  auto ctx = std::make_unique<net::ssl::context>(net::ssl::context::tls_client);
  ctx->set_default_verify_paths();
  ctx->set_verify_mode(net::ssl::verify_peer);
  return ctx;
}

Result<std::unique_ptr<net::ssl::context>> make_client_tls_context(const std::string& ca_file) {
  auto ctx = make_client_tls_context();
  boost::system::error_code ec;
  ctx->load_verify_file(ca_file, ec);
  if (ec)
    return make_error(ErrorCode::provider_unavailable,
                      "cannot load CA file " + ca_file + ": " + ec.message());
  return ctx;
}

Result<net::ssl::context*> UpstreamPool::tls_for(const ProviderEndpoint& ep) {
  if (ep.ca_file.empty()) return &tls_;
  auto it = provider_tls_.find(ep.name);
  if (it == provider_tls_.end()) {
    auto ctx = make_client_tls_context(ep.ca_file);
    if (!ctx) return ctx.error();
    it = provider_tls_.emplace(ep.name, std::move(*ctx)).first;
  }
  return it->second.get();
}

namespace {

constexpr auto idle_keepalive = std::chrono::seconds(cairva::http::upstream_idle_keepalive_s);

static_assert(static_cast<size_t>(Field::request_id) ==
              cairva::http::ResponseReader::request_id_field);
static_assert(field_count == cairva::http::ResponseReader::kept_fields.size());
static_assert(
    cairva::http::ResponseReader::kept_fields[static_cast<size_t>(Field::processing_ms)] ==
    "openai-processing-ms");
static_assert(cairva::http::ResponseReader::kept_fields[static_cast<size_t>(Field::retry_after)] ==
              "retry-after");
static_assert(
    cairva::http::ResponseReader::kept_fields[static_cast<size_t>(Field::anthropic_request_id)] ==
    "request-id");

}  // namespace

void UpstreamConnection::start_response() {
  reader_.emplace();
  reader_->header_limit(static_cast<std::uint32_t>(cairva::http::provider_header_bytes_max));
  reader_->body_limit(boost::none);  // set per use: body_buffered() or hold_at_most()
}

std::optional<ReadStatus> UpstreamConnection::body_buffered(size_t bytes_max) {
  // Beast compares an announced Content-Length with the body limit only as the header
  // completes, and the header was read without one (a stream has none): compare here,
  // before a body byte is read, or a provider announcing 1 TiB would be read to its end.
  const auto announced = reader_->content_length();
  if (announced && *announced > bytes_max) return ReadStatus::too_large;
  reader_->body_limit(bytes_max);  // no body byte parsed yet: Beast allows it
  error_code ec;
  if (!cairva::http::parse_buffered(*reader_, buffer_, false, ec)) return std::nullopt;
  return status_of(Outcome{ec, 0});
}

ReadStatus UpstreamConnection::status_of(const Outcome& o) const {
  const error_code ec = error_of(o);
  if (!ec || ec == http::error::need_buffer) return ReadStatus::ok;
  if (ec == beast::error::timeout) return ReadStatus::timeout;
  if (ec == http::error::body_limit) return ReadStatus::too_large;
  return ReadStatus::cut;
}

bool UpstreamConnection::closed_while_idle(error_code ec) const {
  const bool closed = ec == http::error::end_of_stream || ec == net::error::eof ||
                      ec == net::error::connection_reset || ec == net::error::broken_pipe;
  return closed && (!reader_ || !reader_->got_some());
}

std::unique_ptr<UpstreamConnection> UpstreamPool::take_idle(const ProviderEndpoint& ep) {
  auto& idle = idle_[ep.name];
  if (idle.empty()) return nullptr;
  auto conn = std::move(idle.back());
  idle.pop_back();
  if (std::chrono::steady_clock::now() - conn->idle_since >= idle_keepalive) {
    idle.clear();  // the newest is too old: so are the others; closing them is all they cost
    return nullptr;
  }
  conn->reused = true;
  return conn;
}

void UpstreamPool::release(const ProviderEndpoint& ep, std::unique_ptr<Response> response) {
  // Only this pool's connections come back to it.
  std::unique_ptr<UpstreamConnection> conn(static_cast<UpstreamConnection*>(response.release()));
  auto& idle = idle_[ep.name];
  const auto now = std::chrono::steady_clock::now();
  // Oldest first: drop those idle too long, so no closed socket lingers at the bottom.
  size_t expired = 0;
  while (expired < idle.size() && now - idle[expired]->idle_since >= idle_keepalive) ++expired;
  if (expired > 0) idle.erase(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(expired));
  if (idle.size() >= cairva::http::upstream_idle_connections_max) return;  // closes it
  conn->expires_never();
  conn->idle_since = now;
  idle.push_back(std::move(conn));
}

size_t UpstreamPool::idle_count(const ProviderEndpoint& ep) const {
  auto it = idle_.find(ep.name);
  return it == idle_.end() ? 0 : it->second.size();
}

Task<Result<std::unique_ptr<Response>>> UpstreamPool::send(const ProviderEndpoint& ep,
                                                           const Request& req) {
  auto head = cairva::http::MessageHead::request(req.method, req.path);
  head.add("Host", ep.host_header);
  if (!req.body.empty()) head.add("Content-Type", "application/json");
  head.add("Accept", "application/json, text/event-stream");
  if (!ep.authorization.empty()) head.add("Authorization", ep.authorization);
  if (!ep.x_api_key.empty()) head.add("x-api-key", ep.x_api_key);
  head.add("x-cairva-request-id", req.request_id);
  for (const Header& h : req.headers) head.add(h.name, h.value);
  const std::string& head_text = head.finish(req.body.size(), true);
  // The body is referenced, not copied: the caller keeps it, and a retry sends it again.
  const std::array<net::const_buffer, 2> bytes{net::buffer(head_text), net::buffer(req.body)};
  for (int attempt = 0;; ++attempt) {
    // The retry takes a fresh connection: another idle one may be just as stale.
    std::unique_ptr<UpstreamConnection> conn = attempt == 0 ? take_idle(ep) : nullptr;
    if (!conn) {
      auto connected = co_await connect(ep);
      if (!connected) co_return connected.error();
      conn = std::move(*connected);
    }
    conn->expires_after(req.head_timeout);
    conn->start_response();
    const auto wrote = co_await conn->write(bytes);
    auto ec = conn->error_of(wrote);
    if (!ec) {
      const auto read = co_await conn->read_header();
      ec = conn->error_of(read);
    }
    if (!ec) co_return std::unique_ptr<Response>(std::move(conn));
    if (attempt == 0 && conn->reused && conn->closed_while_idle(ec)) continue;
    if (ec == beast::error::timeout) {
      co_return make_error(ErrorCode::provider_timeout,
                           "provider " + ep.name + " did not respond in time");
    }
    co_return make_error(ErrorCode::provider_unavailable,
                         "provider " + ep.name + " failed: " + ec.message());
  }
}

Task<Result<std::unique_ptr<UpstreamConnection>>> UpstreamPool::connect(
    const ProviderEndpoint& ep) {
  auto it = resolved_.find(ep.name);
  if (it == resolved_.end()) {
    net::ip::basic_resolver<tcp, cairva::http::Executor> resolver(ex_);
    auto [ec, results] = co_await resolver.async_resolve(ep.host, ep.port, task_nothrow);
    if (ec)
      co_return make_error(ErrorCode::provider_unavailable,
                           "cannot resolve provider " + ep.name + ": " + ec.message());
    it = resolved_.emplace(ep.name, std::move(results)).first;
  }
  beast::basic_stream<tcp, cairva::http::Executor> stream(ex_);
  stream.expires_after(std::chrono::seconds(ep.timeout_s));
  auto [ec, endpoint] = co_await stream.async_connect(it->second, task_nothrow);
  if (ec) {
    resolved_.erase(ep.name);  // the address may have moved: resolve again next time
    if (ec == beast::error::timeout)
      co_return make_error(ErrorCode::provider_timeout,
                           "provider " + ep.name + " did not accept a connection in time");
    co_return make_error(ErrorCode::provider_unavailable,
                         "cannot connect to provider " + ep.name + ": " + ec.message());
  }
  stream.socket().set_option(tcp::no_delay(true), ec);
  if (!ep.tls) co_return std::make_unique<UpstreamConnection>(stream.release_socket());

  auto tls_ctx = tls_for(ep);
  if (!tls_ctx) co_return tls_ctx.error();
  auto conn = std::make_unique<UpstreamConnection>(stream.release_socket(), **tls_ctx);
  if (!SSL_set_tlsext_host_name(conn->tls()->native_handle(), ep.host.c_str())) {
    co_return make_error(ErrorCode::provider_unavailable, "TLS: cannot set SNI for " + ep.host);
  }
  conn->tls()->set_verify_callback(net::ssl::host_name_verification(ep.host));
  conn->expires_after(std::chrono::seconds(ep.timeout_s));
  if (auto hec = co_await conn->handshake()) {
    if (hec == beast::error::timeout) {
      co_return make_error(ErrorCode::provider_timeout,
                           "TLS handshake with provider " + ep.name + " timed out");
    }
    co_return make_error(ErrorCode::provider_unavailable,
                         "TLS handshake with provider " + ep.name + " failed: " + hec.message());
  }
  co_return std::move(conn);
}

}  // namespace cairva::upstream
