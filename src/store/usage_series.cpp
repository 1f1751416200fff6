#include "store/usage_series.h"

#include "base/assert.h"

namespace cairva::store {

std::vector<UnixMicros> usage_boundaries(const UsageQuery& q) {
  std::vector<UnixMicros> out;
  for (UnixMicros t = q.from; t < q.to; t += q.bucket_us) out.push_back(t);
  out.push_back(q.to);
  return out;
}

UsageReads usage_reads_for(const UsageQuery& q) {
  const size_t bounds = usage_boundaries(q).size();
  return UsageReads{std::vector<core::Tokens>(bounds), std::vector<int64_t>(bounds),
                    std::vector<int64_t>(bounds - 1), std::vector<int64_t>(bounds - 1)};
}

Status check_usage_query(const UsageQuery& q) {
  auto invalid = [](std::string m) { return make_error(ErrorCode::invalid_request, std::move(m)); };
  if (q.bucket_us <= 0) return invalid("bucket: must be minute, hour or day");
  if (q.to <= q.from) return invalid("to: must be later than from");
  if (q.from % q.bucket_us != 0) return invalid("from: must be aligned to the bucket");
  const int64_t buckets = (q.to - q.from + q.bucket_us - 1) / q.bucket_us;
  if (buckets > usage_buckets_max) {
    return invalid("from/to: " + std::to_string(buckets) + " buckets asked, at most " +
                   std::to_string(usage_buckets_max) +
                   " per call (use a larger bucket or a shorter range)");
  }
  return {};
}

UsageSeries assemble_usage(const UsageQuery& q, const UsageReads& reads) {
  const std::vector<UnixMicros> bounds = usage_boundaries(q);
  const size_t n = bounds.size() - 1;
  CAIRVA_ASSERT(reads.booked_before.size() == bounds.size());
  CAIRVA_ASSERT(reads.started_before.size() == bounds.size());
  CAIRVA_ASSERT(reads.failed.size() == n && reads.pending.size() == n);
  UsageSeries out{q.allocation_id, {}};
  out.buckets.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    UsageBucket b;
    b.start = bounds[i];
    b.tokens = {reads.booked_before[i + 1].input - reads.booked_before[i].input,
                reads.booked_before[i + 1].output - reads.booked_before[i].output};
    b.requests = reads.started_before[i + 1] - reads.started_before[i];
    b.failed = reads.failed[i];
    b.usage_pending = reads.pending[i];
    out.buckets.push_back(b);
  }
  return out;
}

}  // namespace cairva::store
