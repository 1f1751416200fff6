// Config loading: toml++ parses, then every key is checked by hand against the one list of
// known keys below, so that an unknown key or table is an error, never silently ignored.
#include "config/config.h"

#include <toml++/toml.h>

#include <boost/url/parse.hpp>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>

#include "store/url.h"

namespace cairva::config {
namespace {

// Event loops per process; more than this on one machine is a typo, not a plan.
constexpr int64_t threads_max = 1024;
// Timeouts beyond a day are a typo: nothing legitimate waits that long for one request.
constexpr int64_t timeout_s_max = 86'400;
// The largest output hold a request may get by default; far above any model's context.
constexpr int64_t default_max_tokens_max = 100'000'000;
// More connections than this in one process is a typo: each holds a descriptor and buffers.
constexpr int64_t connections_max_max = 10'000'000;
// A body budget beyond 1 TiB is a typo, not a machine.
constexpr int64_t body_bytes_in_flight_max_max = int64_t{1} << 40;
// Config files are a few hundred bytes; this only stops reading something absurd.
constexpr size_t config_file_bytes_max = size_t{1} << 20;

// Collects the first error as "SOURCE: KEY: problem".
class Checker {
 public:
  Checker(std::string source, const LoadOptions& load)
      : options(load), source_(std::move(source)) {}

  void fail(const std::string& key, const std::string& problem) {
    if (!error_) error_ = source_ + ": " + key + ": " + problem;
  }
  bool failed() const { return error_.has_value(); }
  const std::string& message() const { return *error_; }
  const LoadOptions options;

 private:
  std::string source_;
  std::optional<std::string> error_;
};

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// Reports every key of `table` not in `known` (the first one wins the error line).
void reject_unknown(Checker& c, const toml::table& table, const std::string& prefix,
                    std::initializer_list<std::string_view> known) {
  for (const auto& [k, v] : table) {
    bool found = false;
    for (auto name : known) found = found || k.str() == name;
    if (!found) {
      c.fail(prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str()),
             v.is_table() ? "unknown table" : "unknown key");
    }
  }
}

std::optional<std::string> get_string(Checker& c, const toml::table& t, std::string_view key,
                                      const std::string& path) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_string()) {
    c.fail(path, "expected a string, got " + type_name(*n));
    return std::nullopt;
  }
  return n->value<std::string>();
}

std::optional<bool> get_bool(Checker& c, const toml::table& t, std::string_view key,
                             const std::string& path) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_boolean()) {
    c.fail(path, "expected true or false, got " + type_name(*n));
    return std::nullopt;
  }
  return n->value<bool>();
}

std::optional<int64_t> get_int(Checker& c, const toml::table& t, std::string_view key,
                               const std::string& path, int64_t min, int64_t max) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_integer()) {
    c.fail(path, "expected an integer, got " + type_name(*n));
    return std::nullopt;
  }
  const int64_t v = *n->value<int64_t>();
  if (v < min || v > max) {
    c.fail(path, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                     ", got " + std::to_string(v));
    return std::nullopt;
  }
  return v;
}

const toml::table* get_table(Checker& c, const toml::table& root, std::string_view key) {
  const toml::node* n = root.get(key);
  if (!n) return nullptr;
  if (!n->is_table()) {
    c.fail(std::string(key), "expected a table, got " + type_name(*n));
    return nullptr;
  }
  return n->as_table();
}

}  // namespace

bool valid_listen_address(std::string_view addr) {
  const auto colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == addr.size()) return false;
  const std::string_view host = addr.substr(0, colon);
  const std::string_view port = addr.substr(colon + 1);
  if (host.find(':') != std::string_view::npos &&
      !(host.front() == '[' && host.back() == ']' && host.size() > 2)) {
    return false;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  return ec == std::errc() && end == port.data() + port.size() && value <= 65535;
}

namespace {

void check_listen(Checker& c, const std::optional<std::string>& v, const std::string& path,
                  std::string& out) {
  if (!v) return;
  if (!valid_listen_address(*v)) {
    c.fail(path, "expected HOST:PORT (e.g. \"127.0.0.1:8080\"), got " + quoted(*v));
    return;
  }
  out = *v;
}

void load_server(Checker& c, const toml::table& root, Config& cfg) {
  const toml::table* t = get_table(c, root, "server");
  if (!t) return;
  reject_unknown(c, *t, "server",
                 {"listen", "admin_listen", "threads", "access_log", "connections_max",
                  "connections_per_client_max", "first_byte_timeout_s", "body_bytes_in_flight_max",
                  "drain_timeout_s", "access_log_format", "access_log_path"});
  check_listen(c, get_string(c, *t, "listen", "server.listen"), "server.listen", cfg.listen);
  check_listen(c, get_string(c, *t, "admin_listen", "server.admin_listen"), "server.admin_listen",
               cfg.admin_listen);
  if (auto v = get_int(c, *t, "threads", "server.threads", 0, threads_max)) {
    cfg.threads = static_cast<int>(*v);
  }
  if (auto v = get_bool(c, *t, "access_log", "server.access_log")) cfg.access_log = *v;
  if (auto v = get_string(c, *t, "access_log_format", "server.access_log_format")) {
    if (*v != "text" && *v != "json") {
      c.fail("server.access_log_format", "expected \"text\" or \"json\", got " + quoted(*v));
    } else {
      cfg.access_log_json = *v == "json";
    }
  }
  if (auto v = get_string(c, *t, "access_log_path", "server.access_log_path")) {
    if (v->empty() || v->find('\0') != std::string::npos) {
      c.fail("server.access_log_path",
             "expected a file path (leave the key out for standard output), got " + quoted(*v));
    } else {
      cfg.access_log_path = *v;
    }
  }
  if (auto v =
          get_int(c, *t, "connections_max", "server.connections_max", 1, connections_max_max)) {
    cfg.connections_max = *v;
  }
  if (auto v = get_int(c, *t, "connections_per_client_max", "server.connections_per_client_max", 0,
                       connections_max_max)) {
    cfg.connections_per_client_max = *v;
  }
  if (auto v =
          get_int(c, *t, "first_byte_timeout_s", "server.first_byte_timeout_s", 1, timeout_s_max)) {
    cfg.first_byte_timeout_s = *v;
  }
  if (auto v = get_int(c, *t, "body_bytes_in_flight_max", "server.body_bytes_in_flight_max",
                       body_bytes_in_flight_min, body_bytes_in_flight_max_max)) {
    cfg.body_bytes_in_flight_max = *v;
  }
  if (auto v = get_int(c, *t, "drain_timeout_s", "server.drain_timeout_s", 0, timeout_s_max)) {
    cfg.drain_timeout_s = *v;
  }
}

void load_admin(Checker& c, const toml::table& root, Config& cfg) {
  const toml::table* t = get_table(c, root, "admin");
  if (!t) return;
  reject_unknown(c, *t, "admin", {"token_env"});
  if (auto v = get_string(c, *t, "token_env", "admin.token_env")) {
    if (v->empty()) {
      c.fail("admin.token_env", "must name an environment variable, got \"\"");
    } else {
      cfg.admin_token_env = *v;
    }
  }
}

}  // namespace

bool valid_store_url(std::string_view url) {
  if (const auto path = store::sqlite_path(url)) return !path->empty();
  return store::is_postgres_url(url);
}

namespace {

void load_store(Checker& c, const toml::table& root, Config& cfg) {
  const toml::table* t = get_table(c, root, "store");
  if (!t) return;
  reject_unknown(c, *t, "store", {"url", "sync", "pool_size"});
  if (auto v = get_string(c, *t, "url", "store.url")) {
    if (!valid_store_url(*v)) {
      c.fail("store.url", "expected sqlite://PATH or postgresql://..., got " + quoted(*v));
    } else {
      cfg.store_url = *v;
    }
  }
  if (auto v = get_string(c, *t, "sync", "store.sync")) {
    if (*v != "normal" && *v != "full") {
      c.fail("store.sync", "expected \"normal\" or \"full\", got " + quoted(*v));
    } else {
      cfg.store_sync_full = *v == "full";
    }
  }
  if (auto v = get_int(c, *t, "pool_size", "store.pool_size", 1, pool_size_max)) {
    cfg.pool_size = static_cast<int>(*v);
  }
}

void load_holds(Checker& c, const toml::table& root, Config& cfg) {
  const toml::table* t = get_table(c, root, "holds");
  if (!t) return;
  reject_unknown(c, *t, "holds", {"default_max_tokens", "in_flight_timeout_s"});
  if (auto v = get_int(c, *t, "default_max_tokens", "holds.default_max_tokens", 1,
                       default_max_tokens_max)) {
    cfg.default_max_tokens = *v;
  }
  if (auto v =
          get_int(c, *t, "in_flight_timeout_s", "holds.in_flight_timeout_s", 1, timeout_s_max)) {
    cfg.in_flight_timeout_s = *v;
  }
}

void check_base_url(Checker& c, const std::string& path, const std::string& url) {
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed || (parsed->scheme() != "http" && parsed->scheme() != "https") ||
      parsed->host().empty()) {
    c.fail(path, "expected an http:// or https:// URL, got " + quoted(url));
  }
}

void load_provider(Checker& c, const toml::table& t, const std::string& prefix, Provider& p) {
  reject_unknown(
      c, t, prefix,
      {"name", "kind", "base_url", "api_key_env", "timeout_s", "ca_file", "limit_field"});
  auto name = get_string(c, t, "name", prefix + ".name");
  if (!name || name->empty()) {
    if (!c.failed()) c.fail(prefix + ".name", "required: a non-empty provider name");
  } else {
    p.name = *name;
  }
  if (auto kind = get_string(c, t, "kind", prefix + ".kind")) {
    if (*kind == "openai") {
      p.kind = ProviderKind::openai;
    } else if (*kind == "anthropic") {
      p.kind = ProviderKind::anthropic;
    } else {
      c.fail(prefix + ".kind", "expected \"openai\" or \"anthropic\", got " + quoted(*kind));
    }
  }
  auto base = get_string(c, t, "base_url", prefix + ".base_url");
  if (!base) {
    if (!c.failed()) c.fail(prefix + ".base_url", "required: the provider's http(s) URL");
  } else {
    check_base_url(c, prefix + ".base_url", *base);
    p.base_url = *base;
  }
  if (auto env = get_string(c, t, "api_key_env", prefix + ".api_key_env")) {
    const char* value = env->empty() ? nullptr : std::getenv(env->c_str());
    if (env->empty()) {
      c.fail(prefix + ".api_key_env", "must name an environment variable, got \"\"");
    } else if ((value == nullptr || *value == '\0') && !c.options.require_provider_keys) {
      p.api_key_env = *env;
    } else if (value == nullptr || *value == '\0') {
      c.fail(prefix + ".api_key_env",
             "environment variable " + *env +
                 " is not set or empty (it must hold the provider's API key)");
    } else {
      p.api_key_env = *env;
      p.api_key = value;
    }
  }
  if (auto v = get_int(c, t, "timeout_s", prefix + ".timeout_s", 1, timeout_s_max)) {
    p.timeout_s = *v;
  }
  if (auto f = get_string(c, t, "limit_field", prefix + ".limit_field")) {
    if (*f != limit_field_default && *f != limit_field_max_tokens) {
      c.fail(prefix + ".limit_field", "expected \"" + std::string(limit_field_default) +
                                          "\" or \"" + limit_field_max_tokens + "\", got " +
                                          quoted(*f));
    } else {
      p.limit_field = *f;
    }
  }
  if (auto ca = get_string(c, t, "ca_file", prefix + ".ca_file")) {
    std::ifstream probe(*ca);
    if (ca->empty() || !probe) {
      c.fail(prefix + ".ca_file", "cannot read " + quoted(*ca));
    } else {
      p.ca_file = *ca;
    }
  }
}

void load_providers(Checker& c, const toml::table& root, Config& cfg) {
  const toml::node* n = root.get("providers");
  if (!n) return;
  const toml::array* arr = n->as_array();
  if (!arr) {
    c.fail("providers", "expected an array of tables ([[providers]]), got " + type_name(*n));
    return;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < arr->size() && !c.failed(); ++i) {
    const std::string prefix = "providers[" + std::to_string(i) + "]";
    const toml::table* t = (*arr)[i].as_table();
    if (!t) {
      c.fail(prefix, "expected a table, got " + type_name((*arr)[i]));
      return;
    }
    Provider p;
    load_provider(c, *t, prefix, p);
    if (c.failed()) return;
    if (!names.insert(p.name).second) {
      c.fail(prefix + ".name", "duplicate provider name " + quoted(p.name));
      return;
    }
    cfg.providers.push_back(std::move(p));
  }
}

void resolve_admin_token(Config& cfg) {
  const char* token = std::getenv(cfg.admin_token_env.c_str());
  cfg.admin_token = token ? token : "";
}

}  // namespace

Config default_config() {
  Config cfg;
  cfg.source = "(defaults)";
  resolve_admin_token(cfg);
  return cfg;
}

Result<Config> parse_config(const std::string& toml_text, const std::string& source,
                            const LoadOptions& options) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    // toml++ quotes the offending character, which may be a newline: the error must
    // stay one line (SPEC §8), so control characters are shown escaped.
    std::string description;
    for (char ch : e.description()) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(ch));
        description += buf;
      } else {
        description += ch;
      }
    }
    return make_error(ErrorCode::invalid_request, source + ": line " + std::to_string(begin.line) +
                                                      ", column " + std::to_string(begin.column) +
                                                      ": " + description);
  }
  Checker c(source, options);
  Config cfg;
  cfg.source = source;
  reject_unknown(c, root, "", {"server", "admin", "store", "holds", "providers"});
  load_server(c, root, cfg);
  load_admin(c, root, cfg);
  load_store(c, root, cfg);
  load_holds(c, root, cfg);
  load_providers(c, root, cfg);
  if (c.failed()) return make_error(ErrorCode::invalid_request, c.message());
  resolve_admin_token(cfg);
  return cfg;
}

Result<Config> load_config_file(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::invalid_request, path + ": cannot open the config file");
  std::string text;
  text.resize(config_file_bytes_max + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > config_file_bytes_max) {
    return make_error(ErrorCode::invalid_request, path + ": file larger than 1 MiB");
  }
  return parse_config(text, path, options);
}

}  // namespace cairva::config
