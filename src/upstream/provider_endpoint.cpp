#include "upstream/provider_endpoint.h"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace cairva::upstream {

Result<ProviderEndpoint> make_endpoint(const config::Provider& provider) {
  auto parsed = boost::urls::parse_absolute_uri(provider.base_url);
  if (!parsed) {
    return make_error(ErrorCode::invalid_request,
                      "providers." + provider.name + ".base_url: not a URL");
  }
  const boost::urls::url_view url = *parsed;
  ProviderEndpoint ep;
  ep.name = provider.name;
  const std::string scheme(url.scheme());
  if (scheme != "http" && scheme != "https") {
    return make_error(ErrorCode::invalid_request,
                      "providers." + provider.name + ".base_url: scheme must be http or https");
  }
  ep.tls = scheme == "https";
  ep.host = std::string(url.host());
  const std::string default_port = ep.tls ? "443" : "80";
  ep.port = url.has_port() ? std::string(url.port()) : default_port;
  // RFC 9110 §7.2: the port goes in Host unless it is the scheme's default.
  ep.host_header = std::string(url.encoded_host_and_port());
  if (ep.port == default_port) ep.host_header = std::string(url.encoded_host());
  std::string base_path(url.encoded_path());
  while (!base_path.empty() && base_path.back() == '/') base_path.pop_back();
  ep.kind = provider.kind;
  ep.base_path = base_path;
  ep.chat_path = base_path + "/chat/completions";
  if (!provider.api_key.empty()) {
    if (provider.kind == config::ProviderKind::anthropic) {
      ep.x_api_key = provider.api_key;
    } else {
      ep.authorization = "Bearer " + provider.api_key;
    }
  }
  ep.timeout_s = provider.timeout_s;
  ep.ca_file = provider.ca_file;
  return ep;
}

}  // namespace cairva::upstream
