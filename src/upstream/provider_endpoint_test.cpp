#include "upstream/provider_endpoint.h"

#include <gtest/gtest.h>

namespace cairva::upstream {
namespace {

ProviderEndpoint endpoint(const std::string& base_url) {
  config::Provider p;
  p.name = "p";
  p.base_url = base_url;
  auto ep = make_endpoint(p);
  EXPECT_TRUE(ep.ok()) << base_url;
  return ep.ok() ? *ep : ProviderEndpoint{};
}

// RFC 9110 §7.2: Host names the port unless it is the scheme's default.
TEST(ProviderEndpoint, HostCarriesAPortOnlyWhenItIsNotTheSchemesDefault) {
  EXPECT_EQ(endpoint("https://api.example.com/v1").host_header, "api.example.com");
  EXPECT_EQ(endpoint("https://api.example.com:443/v1").host_header, "api.example.com");
  EXPECT_EQ(endpoint("https://api.example.com:8443/v1").host_header, "api.example.com:8443");
  EXPECT_EQ(endpoint("http://127.0.0.1:9000/v1").host_header, "127.0.0.1:9000");
  EXPECT_EQ(endpoint("http://127.0.0.1:80/v1").host_header, "127.0.0.1");
  const ProviderEndpoint ep = endpoint("http://127.0.0.1:9000/base/v1/");
  EXPECT_EQ(ep.port, "9000");
  EXPECT_EQ(ep.chat_path, "/base/v1/chat/completions");
}

TEST(ProviderEndpoint, OnlyHttpAndHttpsUrlsAreProviders) {
  config::Provider p;
  p.name = "p";
  for (const char* bad : {"ftp://example.com/v1", "not a url", "example.com/v1"}) {
    p.base_url = bad;
    EXPECT_FALSE(make_endpoint(p).ok()) << bad;
  }
}

}  // namespace
}  // namespace cairva::upstream
