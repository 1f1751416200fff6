// Fuzzes chat request inspection and the rewrite splice. Properties: nothing crashes; a
// refusal is invalid_request with a message; what inspection accepts is JSON to Boost.JSON
// too; a rewrite is itself a valid request that reads back with exactly the plan applied
// and everything else the same (its estimate only grows by the member names it adds); a
// plan the body already meets changes no byte.
#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "wire/chat_request.h"
#include "wire/limits.h"

using namespace cairva;

namespace {

// Whether Boost.JSON takes `text` as an object. Boost 1.81 refuses valid numbers whose
// exponent it cannot represent (0e2000000000, found by this fuzzer); simdjson and the
// providers' parsers take them, so for those Boost cannot tell.
bool boost_parses(std::string_view text) {
  boost::json::parse_options options;
  options.max_depth = 100000;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec, {}, options);
  if (ec == boost::json::error::exponent_overflow) return true;
  return !ec && v.is_object();
}

void check_rewrite(std::string_view body, const wire::ChatRequest& r,
                   const wire::RewritePlan& plan) {
  const std::string out = wire::rewrite_chat_request(body, r, plan);
  FUZZ_CHECK(boost_parses(out));
  auto again = wire::inspect_chat_request(out);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->model == r.model);
  // Added members' names count (SPEC §4): "max_completion_tokens", "stream_options",
  // "include_usage".
  FUZZ_CHECK(again->prompt.chars >= r.prompt.chars);
  FUZZ_CHECK(again->prompt.chars <= r.prompt.chars + 21 + 14 + 13);
  FUZZ_CHECK(again->prompt.items == r.prompt.items);
  FUZZ_CHECK(again->prompt.media == r.prompt.media);
  FUZZ_CHECK(again->service_tier == r.service_tier);
  FUZZ_CHECK(again->n == r.n);
  FUZZ_CHECK(again->stream == r.stream);
  FUZZ_CHECK(again->include_usage == (plan.include_usage || r.include_usage));
  // Every limit member the body carries, null or not, holds the plan's value; with none,
  // the plan's limit_field does.
  const int64_t held = plan.per_choice_limit;
  if (r.max_tokens_value) FUZZ_CHECK(again->max_tokens == held);
  if (r.max_completion_tokens_value) FUZZ_CHECK(again->max_completion_tokens == held);
  if (!r.max_tokens_value && !r.max_completion_tokens_value) {
    const bool mt = plan.limit_field == wire::limit_field_max_tokens;
    FUZZ_CHECK(again->max_tokens == (mt ? std::optional<int64_t>(held) : std::nullopt));
    FUZZ_CHECK(again->max_completion_tokens == (mt ? std::nullopt : std::optional<int64_t>(held)));
  }
  FUZZ_CHECK(!wire::rewrite_needed(*again, {.per_choice_limit = held}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto r = wire::inspect_chat_request(body);
  // The gateway's path: the body parsed where it lies, in its string's spare capacity.
  std::string owned;
  owned.reserve(size + wire::in_place_slack_bytes);
  owned.assign(body);
  auto in_place = wire::inspect_chat_request(owned);
  FUZZ_CHECK(owned == body);
  FUZZ_CHECK(in_place.ok() == r.ok());
  if (!r.ok()) FUZZ_CHECK(in_place.error().message == r.error().message);
  if (r.ok()) FUZZ_CHECK(*in_place == *r);  // every field, the rewrite's offsets too
  if (!r.ok()) {
    FUZZ_CHECK(r.error().code == ErrorCode::invalid_request);
    FUZZ_CHECK(!r.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(boost_parses(body));
  FUZZ_CHECK(r->prompt.items >= 1 && r->prompt.chars >= 0 && r->prompt.media >= 0);
  FUZZ_CHECK(r->n >= 1);
  FUZZ_CHECK(!r->max_tokens || *r->max_tokens >= 1);
  FUZZ_CHECK(!r->max_completion_tokens || *r->max_completion_tokens >= 1);
  if (r->max_tokens_value && !r->max_completion_tokens_value && r->max_tokens) {
    const wire::RewritePlan met{.per_choice_limit = *r->max_tokens};
    FUZZ_CHECK(!wire::rewrite_needed(*r, met));
    FUZZ_CHECK(wire::rewrite_chat_request(body, *r, met) == body);
  }
  const int64_t lowered = static_cast<int64_t>(size % 1000) + 1;
  check_rewrite(body, *r, {.per_choice_limit = lowered, .include_usage = false});
  check_rewrite(body, *r,
                {.per_choice_limit = lowered, .limit_field = wire::limit_field_max_tokens});
  check_rewrite(body, *r, {.per_choice_limit = lowered, .include_usage = true});
  return 0;
}
