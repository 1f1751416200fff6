#include "upstream/connection.h"

#include <openssl/ssl.h>

#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "http/limits.h"

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
  if (ec) return make_error(ErrorCode::provider_unavailable, "cannot load CA file " + ca_file + ": " + ec.message());
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

std::unique_ptr<UpstreamConnection> UpstreamPool::take_idle(const ProviderEndpoint& ep) {
  auto& idle = idle_[ep.name];
  if (idle.empty()) return nullptr;
  auto conn = std::move(idle.back());
  idle.pop_back();
  conn->reused = true;
  return conn;
}

void UpstreamPool::release(const ProviderEndpoint& ep, std::unique_ptr<UpstreamConnection> conn) {
  auto& idle = idle_[ep.name];
  if (idle.size() >= cairva::http::upstream_idle_connections_max) return;  // closes it
  conn->expires_never();
  idle.push_back(std::move(conn));
}

Task<Result<std::unique_ptr<UpstreamConnection>>> UpstreamPool::connect(const ProviderEndpoint& ep) {
  auto it = resolved_.find(ep.name);
  if (it == resolved_.end()) {
    net::ip::basic_resolver<tcp, cairva::http::Executor> resolver(ex_);
    auto [ec, results] = co_await resolver.async_resolve(ep.host, ep.port, task_nothrow);
    if (ec) co_return make_error(ErrorCode::provider_unavailable, "cannot resolve provider " + ep.name + ": " + ec.message());
    it = resolved_.emplace(ep.name, std::move(results)).first;
  }
  beast::basic_stream<tcp, cairva::http::Executor> stream(ex_);
  stream.expires_after(std::chrono::seconds(ep.timeout_s));
  auto [ec, endpoint] = co_await stream.async_connect(it->second, task_nothrow);
  if (ec) {
    resolved_.erase(ep.name);  // the address may have moved: resolve again next time
    if (ec == beast::error::timeout) co_return make_error(ErrorCode::provider_timeout, "provider " + ep.name + " did not accept a connection in time");
    co_return make_error(ErrorCode::provider_unavailable, "cannot connect to provider " + ep.name + ": " + ec.message());
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
      co_return make_error(ErrorCode::provider_timeout, "TLS handshake with provider " + ep.name + " timed out");
    }
    co_return make_error(ErrorCode::provider_unavailable, "TLS handshake with provider " + ep.name + " failed: " + hec.message());
  }
  co_return std::move(conn);
}

}  // namespace cairva::upstream
