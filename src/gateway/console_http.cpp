#include "gateway/console_http.h"

#include <array>
#include <boost/asio/write.hpp>

#include "base/assert.h"
#include "http/limits.h"

namespace cairva::gateway {

namespace bhttp = boost::beast::http;

ConsoleAnswer console_answer(console::Audience audience, bhttp::verb method,
                             std::string_view target) {
  CAIRVA_ASSERT(console::is_console_path(target));
  const std::string_view path = target.substr(0, target.find('?'));
  if (method != bhttp::verb::get && method != bhttp::verb::head) {
    return {nullptr, ErrorCode::method_not_allowed,
            std::string(bhttp::to_string(method)) + " is not allowed on " + std::string(path) +
                " (use GET)"};
  }
  if (const console::Asset* asset = console::find_asset(audience, target))
    return {asset, ErrorCode::not_found, {}};
  return {nullptr, ErrorCode::not_found, "unknown path " + std::string(path)};
}

http::Task<bool> send_console(ClientExchange& ex, bhttp::verb method, std::string_view target) {
  const ConsoleAnswer answer = console_answer(console::Audience::buyers, method, target);
  if (answer.asset == nullptr) co_return co_await ex.send_error(answer.error, answer.message);
  const console::Asset& asset = *answer.asset;
  auto head = ex.head(200);
  head.add("Content-Type", asset.content_type);
  head.add("Cache-Control", asset.cache_control);
  for (const auto& [name, value] : console::security_headers) head.add(name, value);
  const std::string& text = head.finish(asset.body.size(), ex.keep_alive);
  ex.status_sent = 200;
  ex.outcome = "console";
  std::array<boost::asio::const_buffer, 2> bytes{boost::asio::buffer(text),
                                                 boost::asio::buffer(asset.body)};
  if (ex.head_only) bytes[1] = {};
  ex.deadline.expires_after(std::chrono::seconds(http::client_write_timeout_s));
  auto [ec, n] = co_await boost::asio::async_write(ex.stream, bytes, http::task_nothrow);
  co_return !ec && ex.keep_alive;
}

}  // namespace cairva::gateway
