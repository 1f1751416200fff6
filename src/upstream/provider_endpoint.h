// ProviderEndpoint: a configured provider resolved into what a connection needs.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "config/config.h"

namespace cairva::upstream {

struct ProviderEndpoint {
  std::string name;
  std::string host;
  std::string port;
  std::string host_header;  // the Host field: host, with ":port" when not the scheme's default
  config::ProviderKind kind = config::ProviderKind::openai;
  std::string base_path;  // base_url's path without a trailing '/', e.g. "/v1"
  std::string chat_path;  // base_path + "/chat/completions", e.g. "/v1/chat/completions"
  bool tls = false;
  // The supplier's key, in the dialect's header; both empty when none. Never logged.
  std::string authorization;  // openai: "Bearer <supplier key>"
  std::string x_api_key;      // anthropic: "<supplier key>"
  int64_t timeout_s =
      config::provider_timeout_s_default;  // bound on waiting for the response headers
  std::string ca_file;  // extra trusted CAs (PEM); empty = system trust store only
};

// Parses provider.base_url (http:// or https://) with Boost.URL.
Result<ProviderEndpoint> make_endpoint(const config::Provider& provider);

}  // namespace cairva::upstream
