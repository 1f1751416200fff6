// What every admin command shares: the admin API's options, one call, a listing followed
// through its pages, and the exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "cli/admin_client.h"
#include "cli/cli.h"

namespace cairva::cli {

// The process's exit codes (docs/operations.md, "Deploy with systemd"): the unit restarts
// on 1 and never on 2, which no restart can mend.
inline constexpr int exit_ok = 0;
inline constexpr int exit_refused =
    1;  // a runtime error, or the admin API said no / was not reached
inline constexpr int exit_bad_config = 2;  // a bad config file or command line

struct AdminOptions {
  std::string url;  // empty: env CAIRVA_ADMIN_URL, else admin_url_default
  bool json = false;
  int timeout_s = admin_call_timeout_s;
};

void add_admin_options(CLI::App* cmd, AdminOptions& o);

using Renderer = std::string (*)(const boost::json::value&);

// One admin API call. A 2xx answer's JSON; otherwise what went wrong is printed on stderr
// and the answer is nullopt (the command exits exit_refused).
std::optional<boost::json::value> admin_json(const Hooks& hooks, const AdminOptions& o,
                                             HttpCall call);

// One admin API call: prints the rendered (or, with --json, the raw) answer.
int admin_call(const Hooks& hooks, const AdminOptions& o, HttpCall call, Renderer render);

using Query = std::initializer_list<std::pair<std::string, std::string>>;
// "/admin/v1/" + segments, each percent-encoded, + the query parameters that are set.
std::string admin_target(std::initializer_list<std::string> segments, Query query = {});

// A listing followed through its pages (SPEC-CONSOLE §1), from `after` (exclusive) until
// has_more is false or `max_rows` rows came; `each` gets every page's rows in order.
// False when a call failed (already reported).
using PageRows = std::function<void(const boost::json::array& rows)>;
bool follow_pages(const Hooks& hooks, const AdminOptions& o, const std::string& path,
                  const std::vector<std::pair<std::string, std::string>>& filters,
                  std::optional<std::string> after, std::optional<size_t> max_rows,
                  const PageRows& each);

// The rows of a whole listing, rendered (or with --json printed) as one list.
int admin_list(const Hooks& hooks, const AdminOptions& o, const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& filters,
               std::optional<std::string> after, std::optional<size_t> max_rows, Renderer render);

}  // namespace cairva::cli
