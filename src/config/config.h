// Config: the TOML file of SPEC §8, parsed and validated once at start-up into an
// immutable value. Every default is a named constant here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "core/limits.h"
#include "store/defaults.h"

namespace cairva::config {

inline constexpr const char* listen_default = "127.0.0.1:8080";
inline constexpr const char* admin_listen_default = "127.0.0.1:8081";
inline constexpr const char* admin_token_env_default = "CAIRVA_ADMIN_TOKEN";
inline constexpr const char* store_url_default = "sqlite://cairva.db";
inline constexpr int pool_size_default = store::pool_size_default;
inline constexpr int pool_size_max = store::pool_size_max;
// The seed's defaults live in the core (core/limits.h); the config names them.
inline constexpr int64_t default_max_tokens_default = core::output_hold_tokens_default;
inline constexpr int64_t in_flight_timeout_s_default = core::in_flight_timeout_s_default;
// A provider may take as long as a request may stay in flight.
inline constexpr int64_t provider_timeout_s_default = core::in_flight_timeout_s_default;
// The request member a provider reads its output limit from (SPEC §8): every current
// OpenAI model accepts max_completion_tokens and reasoning models require it.
inline constexpr const char* limit_field_default = "max_completion_tokens";
inline constexpr const char* limit_field_max_tokens =
    "max_tokens";  // for servers that know only that
// [server] connections_max: open public connections per process; beyond it the oldest idle
// connection is shed, or the new one closed at accept.
inline constexpr int64_t connections_max_default = 20000;
// [server] connections_per_client_max: open public connections per client address, so one
// address cannot take the whole budget. Behind a load balancer every client shares its
// address: set 0 (no per-address cap) or the balancer's own connection count there.
inline constexpr int64_t connections_per_client_max_default = 1000;
// [server] first_byte_timeout_s: a connection that has sent nothing for this long is closed;
// a real client sends its request as soon as it connects.
inline constexpr int64_t first_byte_timeout_s_default = 10;
// [server] body_bytes_in_flight_max: request bodies held in memory by the whole process;
// past it new bodies get 503 with Retry-After.
inline constexpr int64_t body_bytes_in_flight_max_default = int64_t{256} << 20;
// The least body budget accepted: two of the largest bodies (16 MiB) and their slack, so
// that a body the gateway admits by size can always be read.
inline constexpr int64_t body_bytes_in_flight_min = int64_t{32} << 20;

// [server] drain_timeout_s: after SIGTERM, how long requests in flight (streams too) may
// run to their end before what is still open is settled as a cut request (SPEC §9). 0: at
// once. Long enough for a typical stream; short enough for a deploy and for systemd's
// TimeoutStopSec (90 s by default) to leave room for the settling.
inline constexpr int64_t drain_timeout_s_default = 30;

// The API dialect a provider speaks (SPEC-APIS §1): which buyer paths it serves, its
// auth header and its error shape.
enum class ProviderKind : uint8_t {
  openai,     // OpenAI and every OpenAI-compatible server (the default)
  anthropic,  // Anthropic's Messages API
};

struct Provider {
  std::string name;
  std::string base_url;     // e.g. https://api.openai.com/v1
  std::string api_key_env;  // env var holding the supplier's key; empty = no key sent
  std::string api_key;      // resolved from api_key_env at load time; never logged
  int64_t timeout_s = provider_timeout_s_default;
  // PEM file of extra trusted CA certificates for this provider (e.g. a private CA);
  // empty = the system's trust store only. Verification is always on.
  std::string ca_file;
  // The limit field the gateway writes the held per-choice limit into when a request
  // names none: limit_field_default or limit_field_max_tokens.
  std::string limit_field = limit_field_default;
  ProviderKind kind = ProviderKind::openai;
};

struct Config {
  std::string source;  // the file it came from, or "(defaults)"
  std::string listen = listen_default;
  std::string admin_listen = admin_listen_default;
  std::string admin_token_env = admin_token_env_default;
  std::string admin_token;  // resolved from admin_token_env; empty = admin API refuses all
  std::string store_url = store_url_default;
  bool store_sync_full = false;  // store.sync = "full"
  int pool_size = pool_size_default;
  int64_t default_max_tokens = default_max_tokens_default;
  int64_t in_flight_timeout_s = in_flight_timeout_s_default;
  std::vector<Provider> providers;
  int threads = 0;               // [server] threads: event loops; 0 = one per core
  bool access_log = true;        // [server] access_log: one line per public request
  bool access_log_json = false;  // [server] access_log_format = "json" (else "text")
  std::string access_log_path;   // [server] access_log_path; empty: standard output
  int64_t connections_max = connections_max_default;
  int64_t connections_per_client_max = connections_per_client_max_default;  // 0: no cap
  int64_t first_byte_timeout_s = first_byte_timeout_s_default;
  int64_t body_bytes_in_flight_max = body_bytes_in_flight_max_default;
  int64_t drain_timeout_s = drain_timeout_s_default;
};

// What loading checks beyond the file itself.
struct LoadOptions {
  // Provider keys must be present in the environment. Off for commands that never call a
  // provider (`cairva audit`): they need the store's settings, not the supplier's keys.
  bool require_provider_keys = true;
};

// Reads and validates `path`. Errors name the file, the key and the problem in one line,
// e.g. "cairva.toml: holds.default_max_tokens: expected a positive integer, got \"x\"".
Result<Config> load_config_file(const std::string& path, const LoadOptions& options = {});
// Parses TOML text (for tests); `source` names it in errors.
Result<Config> parse_config(const std::string& toml_text, const std::string& source,
                            const LoadOptions& options = {});
// "HOST:PORT" with a non-empty host (a bracketed IPv6 literal allowed) and a port 0..65535:
// what server.listen and server.admin_listen (and their command-line overrides) accept.
bool valid_listen_address(std::string_view address);
// sqlite://PATH (PATH non-empty), postgresql://… or postgres://…: what store.url accepts.
bool valid_store_url(std::string_view url);
// The configuration used when no file is given: defaults, the embedded store
// ./cairva.db, and no provider.
Config default_config();

}  // namespace cairva::config
