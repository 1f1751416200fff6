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
  std::string host_header;    // the Host field: host, with ":port" when not the scheme's default
  std::string chat_path;      // base_url's path + "/chat/completions", e.g. "/v1/chat/completions"
  bool tls = false;
  std::string authorization;  // "Bearer <supplier key>", empty when none; never logged
  int64_t timeout_s = 600;    // bound on waiting for the response headers
  std::string ca_file;        // extra trusted CAs (PEM); empty = system trust store only
};

// Parses provider.base_url (http:// or https://) with Boost.URL.
Result<ProviderEndpoint> make_endpoint(const config::Provider& provider);

}  // namespace cairva::upstream
