// The admin listener: HTTP plumbing in front of admin::AdminApi (a pure handler).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "admin/admin_api.h"

namespace cairva::gateway {

// Admin request bodies are small JSON documents.
inline constexpr size_t admin_body_bytes_max = size_t{1} << 20;

boost::asio::awaitable<void> admin_session(admin::AdminApi& api, boost::asio::ip::tcp::socket socket);

}  // namespace cairva::gateway
