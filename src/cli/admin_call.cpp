#include "cli/admin_call.h"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/url.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/admin_commands.h"
#include "cli/printable.h"
#include "store/limits.h"

namespace cairva::cli {
namespace json = boost::json;

namespace {

// The admin API's largest page (admin/limits.h's page_size_max): the fewest calls.
constexpr size_t list_page_rows = store::list_page_rows_max;

}  // namespace

void add_admin_options(CLI::App* cmd, AdminOptions& o) {
  cmd->add_option("--admin-url", o.url,
                  std::string("Admin API base URL (default: env ") + admin_url_env + ", else " +
                      admin_url_default + ")");
  cmd->add_flag("--json", o.json, "Print the API's JSON answer instead of a table");
  cmd->add_option("--admin-timeout", o.timeout_s,
                  "Seconds the whole call to the admin API may take (default " +
                      std::to_string(o.timeout_s) + ")")
      ->check(CLI::Range(1, admin_call_timeout_s_max));
}

std::optional<json::value> admin_json(const Hooks& hooks, const AdminOptions& o, HttpCall call) {
  call.timeout_s = o.timeout_s;
  const char* token = std::getenv(admin_token_env);
  if (token == nullptr || *token == '\0') {
    std::cerr << "cairva: set " << admin_token_env
              << " to the admin token (the gateway reads it from the "
              << "env var named by admin.token_env)\n";
    return std::nullopt;
  }
  std::string url = o.url;
  if (url.empty()) {
    const char* env = std::getenv(admin_url_env);
    url = env != nullptr && *env != '\0' ? env : admin_url_default;
  }
  auto reply = hooks.admin_http ? hooks.admin_http(url, token, call) : admin_http(url, token, call);
  if (!reply) {
    std::cerr << "cairva: " << printable(reply.error().message) << "\n";
    return std::nullopt;
  }
  if (reply->status < 200 || reply->status > 299) {
    std::cerr << render_error(reply->status, reply->body) << "\n";
    return std::nullopt;
  }
  boost::system::error_code ec;
  json::value v = json::parse(reply->body, ec);
  if (ec) {
    std::cerr << "cairva: the admin API answered " << reply->status
              << " with a body that is not JSON\n";
    return std::nullopt;
  }
  return v;
}

int admin_call(const Hooks& hooks, const AdminOptions& o, HttpCall call, Renderer render) {
  auto v = admin_json(hooks, o, std::move(call));
  if (!v) return exit_refused;
  if (o.json) {
    std::cout << printable(json::serialize(*v), Escaping::json) << "\n";
  } else {
    std::cout << render(*v);
  }
  return exit_ok;
}

std::string admin_target(std::initializer_list<std::string> segments, Query query) {
  boost::urls::url u;
  u.set_path("/admin/v1");
  for (const auto& s : segments) u.segments().push_back(s);
  for (const auto& [k, v] : query) {
    if (!v.empty()) u.params().append({k, v});
  }
  return std::string(u.buffer());
}

bool follow_pages(const Hooks& hooks, const AdminOptions& o, const std::string& path,
                  const std::vector<std::pair<std::string, std::string>>& filters,
                  std::optional<std::string> after, std::optional<size_t> max_rows,
                  const PageRows& each) {
  size_t seen = 0;
  for (;;) {
    const size_t want = max_rows ? std::min(list_page_rows, *max_rows - seen) : list_page_rows;
    if (want == 0) return true;
    boost::urls::url u;
    u.set_path(path);
    for (const auto& [k, v] : filters) {
      if (!v.empty()) u.params().append({k, v});
    }
    if (after) u.params().append({"after", *after});
    u.params().append({"limit", std::to_string(want)});
    auto page = admin_json(hooks, o, HttpCall{"GET", std::string(u.buffer()), ""});
    if (!page) return false;
    const json::object* obj = page->if_object();
    const json::value* data = obj ? obj->if_contains("data") : nullptr;
    if (data == nullptr || !data->is_array()) {
      std::cerr << "cairva: the admin API answered a list without data\n";
      return false;
    }
    const json::array& rows = data->get_array();
    each(rows);
    seen += rows.size();
    const json::value* more = obj->if_contains("has_more");
    if (more == nullptr || !more->is_bool() || !more->get_bool() || rows.empty()) return true;
    const json::value& last = rows.back();
    const json::value* id = last.is_object() ? last.get_object().if_contains("id") : nullptr;
    if (id == nullptr || !id->is_string()) {
      std::cerr << "cairva: the admin API answered a row without an id\n";
      return false;
    }
    after = std::string(id->get_string());
  }
}

int admin_list(const Hooks& hooks, const AdminOptions& o, const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& filters,
               std::optional<std::string> after, std::optional<size_t> max_rows, Renderer render) {
  json::array all;
  const bool ok = follow_pages(hooks, o, path, filters, std::move(after), max_rows,
                               [&](const json::array& rows) {
                                 for (const auto& r : rows) all.push_back(r);
                               });
  if (!ok) return exit_refused;
  const json::value list =
      json::object{{"object", "list"}, {"data", std::move(all)}, {"has_more", false}};
  if (o.json) {
    std::cout << printable(json::serialize(list), Escaping::json) << "\n";
  } else {
    std::cout << render(list);
  }
  return exit_ok;
}

}  // namespace cairva::cli
