// The admin listener: HTTP plumbing in front of admin::AdminApi (a pure handler).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "admin/admin_api.h"
#include "http/connections.h"

namespace cairva::gateway {

// A bulk reconciliation of store::reconciliation_items_max items (about 110 bytes each with
// a provider's id) is the largest admin body.
inline constexpr size_t admin_body_bytes_max = size_t{4} << 20;

struct AdminSessionOptions {
  int64_t first_byte_timeout_s = 0;  // server.first_byte_timeout_s
};

boost::asio::awaitable<void> admin_session(admin::AdminApi& api, const AdminSessionOptions& options,
                                           boost::asio::ip::tcp::socket socket,
                                           std::shared_ptr<http::Connection> connection);

}  // namespace cairva::gateway
