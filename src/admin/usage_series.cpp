#include "admin/usage_series.h"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>

#include "store/usage_series.h"

namespace cairva::admin {
namespace json = boost::json;

namespace {

// A series without `from`: this many buckets, the last one holding `to`.
constexpr int64_t usage_buckets_default = 24;
static_assert(usage_buckets_default <= store::usage_buckets_max);

// Floor division: times before 1970 align down too.
int64_t align_down(int64_t t, int64_t unit) {
  return t >= 0 ? t / unit * unit : -((-t + unit - 1) / unit) * unit;
}

}  // namespace

Result<UsageRequest> usage_request(const Query& q, const std::string& allocation_id,
                                   UnixMicros now) {
  if (auto s = check_query(q, {"from", "to", "bucket"}); !s) return s.error();
  UsageRequest out;
  out.bucket = non_empty(q, "bucket").value_or("hour");
  int64_t bucket_us = 0;
  if (out.bucket == "minute") {
    bucket_us = micros_per_minute;
  } else if (out.bucket == "hour") {
    bucket_us = micros_per_hour;
  } else if (out.bucket == "day") {
    bucket_us = micros_per_day;
  } else {
    return make_error(ErrorCode::invalid_request,
                      "bucket: must be minute, hour or day, got " + out.bucket);
  }
  auto to = time_param(q, "to");
  if (!to) return to.error();
  auto from = time_param(q, "from");
  if (!from) return from.error();
  const UnixMicros end = to->value_or(now);
  const UnixMicros start =
      from->has_value() ? align_down(**from, bucket_us)
                        : align_down(end - 1, bucket_us) - (usage_buckets_default - 1) * bucket_us;
  out.query = store::UsageQuery{allocation_id, start, end, bucket_us};
  if (Status s = store::check_usage_query(out.query); !s.ok()) return s.error();
  return out;
}

Query query_of(std::string_view target) {
  Query q;
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return q;
  for (auto p : url->params()) q[std::string(p.key)] = p.has_value ? std::string(p.value) : "";
  return q;
}

std::string usage_series_json(const store::UsageSeries& s, std::string_view bucket) {
  json::array data;
  data.reserve(s.buckets.size());
  for (const auto& b : s.buckets) {
    data.emplace_back(json::object{{"start", format_rfc3339(b.start)},
                                   {"input_tokens", b.tokens.input},
                                   {"output_tokens", b.tokens.output},
                                   {"requests", b.requests},
                                   {"failed", b.failed},
                                   {"usage_pending", b.usage_pending}});
  }
  return json::serialize(json::object{{"object", "usage_series"},
                                      {"allocation_id", s.allocation_id},
                                      {"bucket", bucket},
                                      {"data", std::move(data)}});
}

}  // namespace cairva::admin
