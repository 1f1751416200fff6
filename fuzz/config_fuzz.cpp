// Fuzzes the config loader (src/config) with arbitrary TOML text. Properties: nothing
// crashes or throws; a refusal is an Error with a one-line message naming the source; what
// is accepted is valid by the loader's own rules (listen addresses, store URL, positive
// limits, named providers); parsing is deterministic.
#include <cstdint>
#include <string>

#include "config/config.h"
#include "fuzz_check.h"

using namespace cairva;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto c = config::parse_config(text, "fuzz.toml");
  auto again = config::parse_config(text, "fuzz.toml");
  FUZZ_CHECK(c.ok() == again.ok());
  if (!c.ok()) {
    const std::string& m = c.error().message;
    FUZZ_CHECK(!m.empty());
    FUZZ_CHECK(m.find('\n') == std::string::npos);
    FUZZ_CHECK(m.rfind("fuzz.toml", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(again->listen == c->listen && again->store_url == c->store_url);
  FUZZ_CHECK(config::valid_listen_address(c->listen));
  FUZZ_CHECK(config::valid_listen_address(c->admin_listen));
  FUZZ_CHECK(config::valid_store_url(c->store_url));
  FUZZ_CHECK(c->pool_size > 0 && c->pool_size <= config::pool_size_max);
  FUZZ_CHECK(c->default_max_tokens > 0);
  FUZZ_CHECK(c->in_flight_timeout_s > 0);
  FUZZ_CHECK(c->threads >= 0);
  for (const auto& p : c->providers) {
    FUZZ_CHECK(!p.name.empty());
    FUZZ_CHECK(!p.base_url.empty());
    FUZZ_CHECK(p.timeout_s > 0);
  }
  return 0;
}
