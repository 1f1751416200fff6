#include "metrics/metrics.h"

#include <cstdio>

#include "store/store.h"

namespace cairva::metrics {
namespace {

// Names for core::BookResult, in enum order.
constexpr std::array<std::string_view, book_result_count> book_result_names = {
    "booked", "duplicate", "conflict", "already_settled", "unknown_request", "reused_id"};
static_assert(static_cast<int>(core::BookResult::reused_id) == book_result_count - 1);
// Names for StoreWait, in enum order (the `op` label).
constexpr std::array<std::string_view, store_wait_count> store_wait_names = {"admit", "settle"};

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, std::string_view v) {
  out.append(name);
  if (!labels.empty()) out.append("{").append(labels).append("}");
  out.append(" ").append(v).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, int64_t v) {
  sample(out, name, labels, std::to_string(v));
}

std::string label(std::string_view key, std::string_view value) {
  // Ids and wire names are [a-z0-9_]: nothing to escape.
  return std::string(key) + "=\"" + std::string(value) + "\"";
}

// A label value from outside the code (a version string): the text format's escapes.
std::string escaped_label(std::string_view key, std::string_view value) {
  std::string out(key);
  out.append("=\"");
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string seconds(int64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(us) / 1e6);
  return buf;
}

// `labels`: the series' own labels ("op=\"admit\"") or empty.
template <size_t N>
void histogram(std::string& out, std::string_view name, const Histogram<N>& h, bool micros,
               const std::string& labels = {}) {
  const std::string bucket = std::string(name) + "_bucket";
  const std::string prefix = labels.empty() ? labels : labels + ",";
  int64_t cumulative = 0;
  for (size_t i = 0; i < N; ++i) {
    cumulative += h.bucket(i);
    const std::string le = micros ? seconds(h.bounds()[i]) : std::to_string(h.bounds()[i]);
    sample(out, bucket, prefix + label("le", le), cumulative);
  }
  cumulative += h.bucket(N);
  sample(out, bucket, prefix + label("le", "+Inf"), cumulative);
  sample(out, std::string(name) + "_sum", labels,
         micros ? seconds(h.sum()) : std::to_string(h.sum()));
  sample(out, std::string(name) + "_count", labels, cumulative);
}

void allocation_gauges(std::string& out, const std::vector<store::AllocationStatus>& allocations) {
  const size_t shown = std::min(allocations.size(), allocation_series_max);
  int64_t pending_total = 0;
  for (const auto& a : allocations) pending_total += a.snapshot.usage_pending;
  header(out, "cairva_usage_pending_requests", "gauge", "Requests waiting for reconciliation.");
  sample(out, "cairva_usage_pending_requests", "", pending_total);
  header(out, "cairva_allocations", "gauge", "Allocations in the store.");
  sample(out, "cairva_allocations", "", static_cast<int64_t>(allocations.size()));
  header(out, "cairva_allocation_in_flight", "gauge", "Requests in flight per allocation.");
  for (size_t i = 0; i < shown; ++i) {
    sample(out, "cairva_allocation_in_flight", label("allocation", allocations[i].id),
           allocations[i].snapshot.in_flight);
  }
  header(out, "cairva_allocation_usage_pending", "gauge", "usage_pending requests per allocation.");
  for (size_t i = 0; i < shown; ++i) {
    sample(out, "cairva_allocation_usage_pending", label("allocation", allocations[i].id),
           allocations[i].snapshot.usage_pending);
  }
  header(out, "cairva_allocation_held_tokens", "gauge",
         "Tokens held per allocation and direction.");
  for (size_t i = 0; i < shown; ++i) {
    const auto& a = allocations[i];
    sample(out, "cairva_allocation_held_tokens",
           label("allocation", a.id) + "," + label("direction", "input"), a.snapshot.held.input);
    sample(out, "cairva_allocation_held_tokens",
           label("allocation", a.id) + "," + label("direction", "output"), a.snapshot.held.output);
  }
}

}  // namespace

std::string Metrics::render(const std::vector<store::AllocationStatus>& allocations) const {
  std::string out;
  {
    std::lock_guard lock(build_mu_);
    if (build_) {
      header(out, "cairva_build_info", "gauge",
             "The build and the store schema this process serves (always 1).");
      sample(out, "cairva_build_info",
             escaped_label("version", build_->version) + "," +
                 escaped_label("commit", build_->commit) + "," +
                 escaped_label("schema", build_->schema),
             1);
    }
  }
  header(out, "cairva_requests_total", "counter", "Public API requests by outcome.");
  sample(out, "cairva_requests_total", label("outcome", "admitted"),
         admitted_.load(std::memory_order_relaxed));
  for (int i = 0; i < error_code_count; ++i) {
    sample(out, "cairva_requests_total", label("outcome", wire_name(static_cast<ErrorCode>(i))),
           refused_[i].load(std::memory_order_relaxed));
  }
  header(out, "cairva_admission_refusals_total", "counter",
         "Admission refusals by the check that failed.");
  for (int i = 0; i < refusal_count; ++i) {
    sample(out, "cairva_admission_refusals_total",
           label("reason", core::refusal_name(static_cast<core::Refusal>(i))),
           refusals_[i].load(std::memory_order_relaxed));
  }
  header(out, "cairva_provider_latency_seconds", "histogram",
         "Time to the provider's response headers.");
  histogram(out, "cairva_provider_latency_seconds", provider_latency_, true);
  header(out, "cairva_bookings_total", "counter", "Provider usage reports by booking result.");
  for (int i = 0; i < book_result_count; ++i) {
    sample(out, "cairva_bookings_total", label("result", book_result_names[i]),
           bookings_[i].load(std::memory_order_relaxed));
  }
  header(out, "cairva_booked_tokens_total", "counter", "Tokens booked from provider reports.");
  sample(out, "cairva_booked_tokens_total", label("direction", "input"),
         booked_input_.load(std::memory_order_relaxed));
  sample(out, "cairva_booked_tokens_total", label("direction", "output"),
         booked_output_.load(std::memory_order_relaxed));
  header(out, "cairva_usage_missing_total", "counter",
         "Provider completions without usage (now usage_pending).");
  sample(out, "cairva_usage_missing_total", "", usage_missing_.load(std::memory_order_relaxed));
  header(out, "cairva_store_wait_seconds", "histogram",
         "From a request's store call to its handler running again, by operation.");
  for (int i = 0; i < store_wait_count; ++i) {
    histogram(out, "cairva_store_wait_seconds", store_wait_[i], true,
              label("op", store_wait_names[i]));
  }
  header(out, "cairva_stream_relay_seconds", "histogram",
         "A stream's bytes from the provider read that brought them to their write to the client.");
  histogram(out, "cairva_stream_relay_seconds", stream_relay_, true);
  header(out, "cairva_store_commit_batch_writes", "histogram",
         "Writes per store commit batch (SQLite: records per oplog commit; PostgreSQL: admissions "
         "per transaction).");
  histogram(out, "cairva_store_commit_batch_writes", commit_batch_, false);
  header(out, "cairva_access_log_dropped_lines_total", "counter",
         "Access log lines dropped because the log's buffer was full.");
  sample(out, "cairva_access_log_dropped_lines_total", "",
         access_log_dropped_.load(std::memory_order_relaxed));
  allocation_gauges(out, allocations);
  return out;
}

Metrics& registry() {
  static Metrics instance;
  return instance;
}

std::string render_metrics(store::Store& store) {
  auto allocations = store.list_allocations();
  std::string out;
  header(out, "cairva_store_up", "gauge", "1 when the store answered this scrape.");
  if (!allocations) {
    sample(out, "cairva_store_up", "", 0);
    std::string message = allocations.error().message;
    for (char& ch : message) {
      if (ch == '\n' || ch == '\r') ch = ' ';  // the comment must stay one line
    }
    out.append("# store error: ").append(message).append("\n");
    return registry().render({}) + out;
  }
  sample(out, "cairva_store_up", "", 1);
  return registry().render(*allocations) + out;
}

}  // namespace cairva::metrics
