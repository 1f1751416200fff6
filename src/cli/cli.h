// `cairva`'s command line (SPEC §8): serve, mock-provider, audit, and the admin commands,
// which are thin clients of the admin API. The process-level actions (serve,
// mock-provider, audit) arrive as hooks from src/main.cpp, so that this library does not
// depend on the gateway.
#pragma once

#include <functional>
#include <string>

#include "base/result.h"
#include "cli/admin_client.h"
#include "config/config.h"
#include "store/store.h"

namespace cairva::cli {

inline constexpr const char* admin_url_env = "CAIRVA_ADMIN_URL";
inline constexpr const char* admin_token_env = "CAIRVA_ADMIN_TOKEN";
inline constexpr const char* admin_url_default = "http://127.0.0.1:8081";
inline constexpr const char* mock_provider_listen_default = "127.0.0.1:9090";

struct Hooks {
  // Runs the gateway until a signal; returns the exit code.
  std::function<int(const config::Config&)> serve;
  // Runs the built-in mock provider on `listen` with `threads` event loops; returns the exit code.
  std::function<int(const std::string& listen, int threads)> mock_provider;
  // Opens the configured store and audits its ledger.
  std::function<Result<store::AuditReport>(const config::Config&)> audit;
  // What `cairva --version` prints (version, commit, schema versions); empty: no flag.
  std::string version;
  // The admin API transport; empty = the real HTTP client (tests inject a fake).
  std::function<Result<HttpReply>(const std::string& admin_url, const std::string& token,
                                  const HttpCall&)>
      admin_http;
};

// Parses argv and runs the command. Returns the process exit code: 0 on success, 1 on a
// runtime error (a hook's own 1, the admin API refused or could not be reached, an
// exception), 2 on a bad config file or bad usage.
int run(int argc, char** argv, const Hooks& hooks);

// The store options `cairva serve` and `cairva audit` open the store with.
store::StoreOptions store_options(const config::Config& config);

}  // namespace cairva::cli
