// Fuzzes the admin API's body reader (src/admin/body.h) with arbitrary bytes read as an
// agreement body and as a reconciliation body. Properties: nothing crashes or throws;
// every value it hands back is inside the bounds asked for; once it has refused, it stays
// refused with a non-empty invalid_request message.
#include <cstdint>
#include <string>
#include <string_view>

#include "admin/body.h"
#include "fuzz_check.h"

using namespace cairva;

namespace {

constexpr int64_t tokens_max = int64_t{1} << 50;
constexpr size_t text_bytes_max = 256;
constexpr size_t models_max = 64;

void check_error(const admin::BodyReader& r) {
  if (r.ok()) return;
  const Error e = r.error();
  FUZZ_CHECK(e.code == ErrorCode::invalid_request);
  FUZZ_CHECK(!e.message.empty());
}

void agreement(std::string_view body) {
  admin::BodyReader r(body, {"supplier", "buyer", "provider", "models", "input_tokens",
                             "output_tokens", "starts_at", "ends_at", "requests_per_minute",
                             "tokens_per_minute", "max_concurrency"});
  const bool ok_before = r.ok();
  auto supplier = r.string("supplier", text_bytes_max, true);
  if (supplier) FUZZ_CHECK(supplier->size() <= text_bytes_max);
  auto models = r.string_list("models", models_max, text_bytes_max);
  if (models) {
    FUZZ_CHECK(models->size() <= models_max);
    for (const auto& m : *models) FUZZ_CHECK(m.size() <= text_bytes_max);
  }
  for (std::string_view key : {"input_tokens", "output_tokens", "requests_per_minute"}) {
    auto v = r.integer(key, 1, tokens_max, true);
    if (v) FUZZ_CHECK(*v >= 1 && *v <= tokens_max);
  }
  (void)r.time("starts_at", false);
  (void)r.time("ends_at", true);
  if (!ok_before) FUZZ_CHECK(!r.ok());
  check_error(r);
}

void reconciliation(std::string_view body) {
  admin::BodyReader r(body, {"input_tokens", "output_tokens", "evidence"});
  auto in = r.integer("input_tokens", 0, tokens_max, true);
  auto out = r.integer("output_tokens", 0, tokens_max, true);
  auto evidence = r.string("evidence", text_bytes_max, true);
  if (in) FUZZ_CHECK(*in >= 0 && *in <= tokens_max);
  if (out) FUZZ_CHECK(*out >= 0 && *out <= tokens_max);
  if (evidence) FUZZ_CHECK(evidence->size() <= text_bytes_max);
  if (r.ok()) FUZZ_CHECK(in && out && evidence);
  check_error(r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  agreement(body);
  reconciliation(body);
  return 0;
}
