// The public API: everything one event loop needs to serve `POST /v1/chat/completions`,
// `GET /v1/allocations/current` and `GET /healthz`.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>
#include <vector>

#include "base/time.h"
#include "config/config.h"
#include "gateway/access_log.h"
#include "gateway/open_requests.h"
#include "gateway/settle_retry.h"
#include "http/body_budget.h"
#include "http/connections.h"
#include "store/store.h"
#include "upstream/provider_endpoint.h"

namespace cairva::upstream {
class UpstreamPool;  // upstream/connection.h: Beast-heavy, included only where it is used
}  // namespace cairva::upstream

namespace cairva::gateway {

// Shared, immutable after start-up (the Store is thread-safe).
struct Gateway {
  const config::Config& config;
  store::Store& store;
  const Clock& clock;
  std::vector<upstream::ProviderEndpoint> providers;
  http::BodyBudget* body_budget = nullptr;  // request bodies in memory, every loop; null: none
  // Where a settlement the store could not record is kept and settled again (may be null).
  SettlementRetry* settlement_retry = nullptr;
  // True once the process drains (serve.cpp): /healthz answers 503 and every response
  // closes its connection. Null: never.
  const std::atomic<bool>* draining = nullptr;
  AccessLog* access_log = nullptr;  // null: server.access_log = false

  bool is_draining() const {
    return draining != nullptr && draining->load(std::memory_order_relaxed);
  }

  const upstream::ProviderEndpoint* find_provider(const std::string& name) const {
    for (const auto& p : providers) {
      if (p.name == name) return &p;
    }
    return nullptr;
  }
};

// One client connection's keep-alive loop on the calling event loop. `pool` is that
// loop's upstream pool (and names its executor); `open` that loop's requests in flight.
boost::asio::awaitable<void> public_session(const Gateway& gw, upstream::UpstreamPool& pool,
                                            OpenRequests& open, boost::asio::ip::tcp::socket socket,
                                            std::shared_ptr<http::Connection> connection);

}  // namespace cairva::gateway
