// PostgresStore's calls for operating at volume (SPEC-CONSOLE): listings in pages, usage
// series, bulk reconciliation's lookups and conflicts, adjustments.
//
// Listing orders (schema.cpp, migration 5): one allocation's rows in the order its row lock
// gave them; every allocation's rows by commit (txid), showing only rows of transactions
// older than any still running, so that a row committed after a page was read never sorts
// before that page.
#include <algorithm>
#include <limits>

#include "base/ids.h"
#include "core/adjustment.h"
#include "core/limits.h"
#include "store/postgres/codec.h"
#include "store/postgres/console_statements.h"
#include "store/postgres/postgres_store.h"
#include "store/postgres/statements.h"
#include "store/usage_series.h"

namespace cairva::store::pg {
namespace {

constexpr int64_t int64_min = std::numeric_limits<int64_t>::min();
constexpr int64_t int64_max = std::numeric_limits<int64_t>::max();

Error invalid(std::string message) {
  return make_error(ErrorCode::invalid_request, std::move(message));
}

// Up to `limit` rows of `r` (which selected limit + 1) as a page.
template <class T, class Parse>
Result<Paged<T>> collect(const PgResult& r, size_t limit, Parse parse) {
  Paged<T> out;
  const int n = rows(r);
  for (int i = 0; i < n; ++i) {
    if (out.data.size() == limit) {
      out.has_more = true;
      break;
    }
    Result<T> row = parse(r.get(), i);
    if (!row.ok()) return row.error();
    out.data.push_back(std::move(row).value());
  }
  return out;
}

// The row `after` names, or invalid_request.
Result<PgResult> position(Connection& c, const Statement& st, const std::string& id,
                          const char* what) {
  auto p = c.run(st, Params().text(id));
  if (!p.ok()) return p.error();
  if (rows(*p) == 0) return invalid(std::string("after: unknown ") + what + " id " + id);
  return std::move(p).value();
}

Result<ConflictRow> parse_conflict(const PGresult* res, int i) {
  return ConflictRow{get_text(res, i, 0),
                     get_text(res, i, 1),
                     get_text(res, i, 2),
                     get_text(res, i, 3),
                     {get_i64(res, i, 4), get_i64(res, i, 5)},
                     {get_i64(res, i, 6), get_i64(res, i, 7)},
                     get_i64(res, i, 8)};
}

Result<AllocationRow> lock_row(Connection& c, const std::string& allocation_id) {
  auto r = c.run(sql::lock_allocation, Params().text(allocation_id));
  if (!r.ok()) return r.error();
  if (rows(*r) == 0)
    return make_error(ErrorCode::not_found, "allocation not found: " + allocation_id);
  return parse_allocation(r->get(), 0, 0);
}

// The listings' horizon (sql::listing_horizon), read before the listing's own statement.
Result<int64_t> horizon(Connection& c) {
  auto r = c.run(sql::listing_horizon, Params());
  if (!r.ok()) return r.error();
  return get_i64(r->get(), 0, 0);
}

std::string array_literal(const std::vector<UnixMicros>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "}";
}

}  // namespace

// ---------------------------------------------------------------- listings

Result<Paged<RequestRow>> PostgresStore::list_requests(const RequestFilter& f) {
  return with_connection<Paged<RequestRow>>([&](Connection& c) -> Result<Paged<RequestRow>> {
    const size_t limit = page_rows(f.limit);
    const int64_t from = f.from.value_or(int64_min);
    const int64_t to = f.to.value_or(int64_max);
    PgResult pos;
    if (f.after) {
      auto p = position(c, sql::request_position, *f.after, "request");
      if (!p.ok()) return p.error();
      pos = std::move(p).value();
    }
    Result<PgResult> r = make_error(ErrorCode::internal_error, "unreachable");
    if (f.allocation_id) {
      int64_t at = int64_min, ordinal = 0;
      if (pos) {
        if (get_text(pos.get(), 0, 0) != *f.allocation_id) {
          return invalid("after: request " + *f.after + " is not a request of " + *f.allocation_id);
        }
        at = get_i64(pos.get(), 0, 1);
        ordinal = get_i64(pos.get(), 0, 2);
      }
      r = c.run(sql::list_allocation_requests(f.state), Params()
                                                            .text(*f.allocation_id)
                                                            .i64(at)
                                                            .i64(ordinal)
                                                            .i64(from)
                                                            .i64(to)
                                                            .i64(static_cast<int64_t>(limit) + 1));
    } else {
      const int64_t txid = pos ? get_i64(pos.get(), 0, 3) : int64_min;
      const int64_t seq = pos ? get_i64(pos.get(), 0, 4) : int64_min;
      auto below = horizon(c);
      if (!below.ok()) return below.error();
      r = c.run(sql::list_all_requests(f.state), Params()
                                                     .i64(txid)
                                                     .i64(seq)
                                                     .i64(from)
                                                     .i64(to)
                                                     .i64(static_cast<int64_t>(limit) + 1)
                                                     .i64(*below));
    }
    if (!r.ok()) return r.error();
    return collect<RequestRow>(*r, limit, parse_request);
  });
}

Result<Paged<UsageEventRow>> PostgresStore::list_events(const EventFilter& f) {
  return with_connection<Paged<UsageEventRow>>([&](Connection& c) -> Result<Paged<UsageEventRow>> {
    const size_t limit = page_rows(f.limit);
    const int64_t from = f.from.value_or(int64_min);
    const int64_t to = f.to.value_or(int64_max);
    PgResult pos;
    if (f.after) {
      auto p = position(c, sql::event_position, *f.after, "event");
      if (!p.ok()) return p.error();
      pos = std::move(p).value();
    }
    Result<PgResult> r = make_error(ErrorCode::internal_error, "unreachable");
    if (f.allocation_id) {
      // Positions are per allocation: another allocation's event is no position here.
      int64_t at = int64_min, seq = 0;
      if (pos) {
        if (get_text(pos.get(), 0, 0) != *f.allocation_id) {
          return invalid("after: event " + *f.after + " is not an event of " + *f.allocation_id);
        }
        at = get_i64(pos.get(), 0, 1);
        seq = get_i64(pos.get(), 0, 2);
      }
      r = c.run(sql::list_allocation_events, Params()
                                                 .text(*f.allocation_id)
                                                 .i64(at)
                                                 .i64(seq)
                                                 .i64(from)
                                                 .i64(to)
                                                 .i64(static_cast<int64_t>(limit) + 1));
    } else {
      const int64_t txid = pos ? get_i64(pos.get(), 0, 3) : int64_min;
      const int64_t gseq = pos ? get_i64(pos.get(), 0, 4) : int64_min;
      auto below = horizon(c);
      if (!below.ok()) return below.error();
      r = c.run(sql::list_all_events, Params()
                                          .i64(txid)
                                          .i64(gseq)
                                          .i64(from)
                                          .i64(to)
                                          .i64(static_cast<int64_t>(limit) + 1)
                                          .i64(*below));
    }
    if (!r.ok()) return r.error();
    return collect<UsageEventRow>(*r, limit, parse_event);
  });
}

Result<Paged<ConflictRow>> PostgresStore::list_conflicts(const ConflictFilter& f) {
  return with_connection<Paged<ConflictRow>>([&](Connection& c) -> Result<Paged<ConflictRow>> {
    const size_t limit = page_rows(f.limit);
    PgResult pos;
    if (f.after) {
      auto p = position(c, sql::conflict_position, *f.after, "conflict");
      if (!p.ok()) return p.error();
      pos = std::move(p).value();
      if (f.allocation_id && get_text(pos.get(), 0, 0) != *f.allocation_id) {
        return invalid("after: conflict " + *f.after + " is not a conflict of " + *f.allocation_id);
      }
    }
    const int64_t n = static_cast<int64_t>(limit) + 1;
    Result<PgResult> r = make_error(ErrorCode::internal_error, "unreachable");
    if (f.allocation_id) {
      r = c.run(sql::list_allocation_conflicts,
                Params().text(*f.allocation_id).i64(pos ? get_i64(pos.get(), 0, 1) : 0).i64(n));
    } else {
      auto below = horizon(c);
      if (!below.ok()) return below.error();
      r = c.run(sql::list_all_conflicts, Params()
                                             .i64(pos ? get_i64(pos.get(), 0, 2) : int64_min)
                                             .i64(pos ? get_i64(pos.get(), 0, 1) : int64_min)
                                             .i64(n)
                                             .i64(*below));
    }
    if (!r.ok()) return r.error();
    return collect<ConflictRow>(*r, limit, parse_conflict);
  });
}

Result<Paged<AgreementRow>> PostgresStore::list_agreements(const PageFilter& f) {
  return with_connection<Paged<AgreementRow>>([&](Connection& c) -> Result<Paged<AgreementRow>> {
    const size_t limit = page_rows(f.limit);
    int64_t after = 0;
    if (f.after) {
      auto p = position(c, sql::agreement_position, *f.after, "agreement");
      if (!p.ok()) return p.error();
      after = get_i64(p->get(), 0, 0);
    }
    auto r = c.run(sql::list_agreements, Params().i64(after).i64(static_cast<int64_t>(limit) + 1));
    if (!r.ok()) return r.error();
    return collect<AgreementRow>(*r, limit, parse_agreement);
  });
}

// The supplier and buyer filters apply in the query; the state filter to the effective state
// computed from each row, reading further rows until the page is full.
Result<Paged<AllocationStatus>> PostgresStore::list_allocations_page(const AllocationFilter& f) {
  return with_connection<Paged<AllocationStatus>>(
      [&](Connection& c) -> Result<Paged<AllocationStatus>> {
        const size_t limit = page_rows(f.limit);
        const size_t chunk =
            f.state ? std::max(limit + 1, allocation_filter_chunk_rows) : limit + 1;
        int64_t after = 0;
        if (f.after) {
          auto p = position(c, sql::allocation_position, *f.after, "allocation");
          if (!p.ok()) return p.error();
          after = get_i64(p->get(), 0, 0);
        }
        Paged<AllocationStatus> out;
        for (;;) {
          Params params;
          params.opt_i64(injected_now())
              .i64(after)
              .i64(options_.in_flight_timeout_s * micros_per_second)
              .i64(core::rate_window_us)
              .i64(static_cast<int64_t>(chunk))
              .opt_text(f.supplier)
              .opt_text(f.buyer);
          auto r = c.run(sql::allocation_status_page, params);
          if (!r.ok()) return r.error();
          const PGresult* res = r->get();
          const int n = rows(*r);
          for (int i = 0; i < n; ++i) {
            auto alloc = parse_allocation(res, i, sql::status_lock_offset);
            if (!alloc.ok()) return alloc.error();
            AllocationStatus s{get_text(res, i, 0), alloc->agreement_id, alloc->snap};
            const UnixMicros now = parse_counts(res, i, sql::status_counts_offset, s.snapshot);
            s.snapshot.state = core::effective_state(s.snapshot, now);
            after = get_i64(res, i, sql::status_page_seq_col);
            if (f.state && s.snapshot.state != *f.state) continue;
            if (out.data.size() == limit) {
              out.has_more = true;
              return out;
            }
            out.data.push_back(std::move(s));
          }
          if (static_cast<size_t>(n) < chunk) return out;
        }
      });
}

Result<Paged<ApiKeyRow>> PostgresStore::list_keys(const std::string& allocation_id,
                                                  const PageFilter& f) {
  return with_connection<Paged<ApiKeyRow>>([&](Connection& c) -> Result<Paged<ApiKeyRow>> {
    auto known = c.run(sql::allocation_known, Params().text(allocation_id));
    if (!known.ok()) return known.error();
    if (rows(*known) == 0)
      return make_error(ErrorCode::not_found, "allocation not found: " + allocation_id);
    const size_t limit = page_rows(f.limit);
    int64_t after = 0;
    if (f.after) {
      auto p = position(c, sql::key_position, *f.after, "key");
      if (!p.ok()) return p.error();
      if (get_text(p->get(), 0, 1) != allocation_id) {
        return invalid("after: key " + *f.after + " is not a key of " + allocation_id);
      }
      after = get_i64(p->get(), 0, 0);
    }
    auto r = c.run(sql::list_keys,
                   Params().text(allocation_id).i64(after).i64(static_cast<int64_t>(limit) + 1));
    if (!r.ok()) return r.error();
    return collect<ApiKeyRow>(*r, limit, [](const PGresult* res, int i) -> Result<ApiKeyRow> {
      return ApiKeyRow{get_text(res, i, 0), get_text(res, i, 1), get_bool(res, i, 2),
                       get_i64(res, i, 3)};
    });
  });
}

// ---------------------------------------------------------------- usage series

Result<UsageSeries> PostgresStore::usage_series_on(Connection& c, const UsageQuery& q) {
  {
    // Every probe in one snapshot.
    Transaction tx(c);
    if (Status s = tx.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !s.ok())
      return s.error();
    auto known = c.run(sql::allocation_known, Params().text(q.allocation_id));
    if (!known.ok()) return known.error();
    if (rows(*known) == 0)
      return make_error(ErrorCode::not_found, "allocation not found: " + q.allocation_id);
    const std::vector<UnixMicros> bounds = usage_boundaries(q);
    auto at =
        c.run(sql::usage_at_boundaries, Params().text(q.allocation_id).text(array_literal(bounds)));
    if (!at.ok()) return at.error();
    UsageReads reads = usage_reads_for(q);
    const PGresult* res = at->get();
    for (int i = 0; i < rows(*at) && static_cast<size_t>(i) < bounds.size(); ++i) {
      // The later of the last event and the last adjustment carries the running totals.
      const bool event = !PQgetisnull(res, i, 0);
      const bool adjustment = !PQgetisnull(res, i, 4);
      int col = -1;
      if (event && adjustment) {
        const auto e = std::pair{get_i64(res, i, 2), get_i64(res, i, 3)};
        const auto a = std::pair{get_i64(res, i, 6), get_i64(res, i, 7)};
        col = e > a ? 0 : 4;
      } else if (event || adjustment) {
        col = event ? 0 : 4;
      }
      if (col >= 0)
        reads.booked_before[static_cast<size_t>(i)] = {get_i64(res, i, col),
                                                       get_i64(res, i, col + 1)};
      reads.started_before[static_cast<size_t>(i)] = get_i64(res, i, 8);
    }
    auto unsettled = c.run(sql::usage_unsettled,
                           Params().text(q.allocation_id).i64(q.from).i64(q.to).i64(q.bucket_us));
    if (!unsettled.ok()) return unsettled.error();
    for (int i = 0; i < rows(*unsettled); ++i) {
      const int64_t bucket = get_i64(unsettled->get(), i, 0);
      if (bucket < 0 || static_cast<size_t>(bucket) >= reads.failed.size()) continue;
      (get_bool(unsettled->get(), i, 1) ? reads.failed
                                        : reads.pending)[static_cast<size_t>(bucket)] =
          get_i64(unsettled->get(), i, 2);
    }
    if (Status s = tx.commit(); !s.ok()) return s.error();
    return assemble_usage(q, reads);
  }
}

// ---------------------------------------------------------------- bulk reconciliation

Result<std::vector<BookedMatch>> PostgresStore::find_bookings(
    const std::optional<std::string>& allocation_id, const std::string& provider_request_id) {
  return with_connection<std::vector<BookedMatch>>(
      [&](Connection& c) -> Result<std::vector<BookedMatch>> {
        auto r =
            c.run(sql::find_bookings, Params().opt_text(allocation_id).text(provider_request_id));
        if (!r.ok()) return r.error();
        std::vector<BookedMatch> out;
        out.reserve(static_cast<size_t>(rows(*r)));
        for (int i = 0; i < rows(*r); ++i) {
          out.push_back(BookedMatch{get_text(r->get(), i, 0),
                                    get_text(r->get(), i, 1),
                                    {get_i64(r->get(), i, 2), get_i64(r->get(), i, 3)}});
        }
        return out;
      });
}

Result<std::vector<RequestRow>> PostgresStore::find_pending(
    const std::optional<std::string>& allocation_id, const std::string& provider_request_id) {
  return with_connection<std::vector<RequestRow>>(
      [&](Connection& c) -> Result<std::vector<RequestRow>> {
        auto r =
            c.run(sql::find_pending, Params().text(provider_request_id).opt_text(allocation_id));
        if (!r.ok()) return r.error();
        std::vector<RequestRow> out;
        for (int i = 0; i < rows(*r); ++i) {
          auto row = parse_request(r->get(), i);
          if (!row.ok()) return row.error();
          out.push_back(std::move(row).value());
        }
        return out;
      });
}

Result<bool> PostgresStore::record_conflict_on(Connection& c, ConflictRow row) {
  Transaction tx(c);
  if (Status s = tx.begin(); !s.ok()) return s.error();
  if (auto marked = c.exec(sql::mark_row_writer); !marked.ok()) return marked.error();
  // Under the row lock, as a settlement's conflicts are: per allocation, seq is commit order.
  auto alloc = lock_row(c, row.allocation_id);
  if (!alloc.ok()) return alloc.error();
  auto seen = c.run(sql::conflict_seen, Params()
                                            .text(row.allocation_id)
                                            .text(row.provider_request_id)
                                            .i64(row.reported.input)
                                            .i64(row.reported.output));
  if (!seen.ok()) return seen.error();
  if (rows(*seen) > 0) return false;
  if (row.request_id.empty()) {
    auto booked = c.run(sql::booked_event_by_provider_id,
                        Params().text(row.allocation_id).text(row.provider_request_id));
    if (!booked.ok()) return booked.error();
    if (rows(*booked) > 0) row.request_id = get_text(booked->get(), 0, 2);
  }
  auto now = c.run(sql::read_now, Params().opt_i64(injected_now()));
  if (!now.ok()) return now.error();
  auto ins = c.run(sql::insert_conflict,
                   conflict_params(row.allocation_id, row.request_id, row.provider_request_id,
                                   row.reported, row.booked, get_i64(now->get(), 0, 0)));
  if (!ins.ok()) return ins.error();
  if (Status s = tx.commit(); !s.ok()) return s.error();
  return true;
}

Result<int64_t> PostgresStore::record_conflicts(std::vector<ConflictRow> conflicts) {
  int64_t recorded = 0;
  for (auto& row : conflicts) {
    auto one = with_connection<bool>([&](Connection& c) { return record_conflict_on(c, row); });
    if (!one.ok()) return one.error();
    if (*one) ++recorded;
  }
  return recorded;
}

// ---------------------------------------------------------------- adjustments

Result<UsageEventRow> PostgresStore::adjust(const Adjustment& a) {
  if (a.evidence.empty()) return invalid("evidence: must be a non-empty string");
  if (a.delta == core::Tokens{})
    return invalid("input_tokens, output_tokens: an adjustment changes at least one");
  return with_connection<UsageEventRow>([&](Connection& c) { return adjust_on(c, a); });
}

Result<UsageEventRow> PostgresStore::adjust_on(Connection& c, const Adjustment& a) {
  auto ev = c.run(sql::event_to_adjust, Params().text(a.event_id));
  if (!ev.ok()) return ev.error();
  if (rows(*ev) == 0) return make_error(ErrorCode::not_found, "event not found: " + a.event_id);
  if (!PQgetisnull(ev->get(), 0, 3)) {
    return invalid("event " + a.event_id + " is an adjustment: adjust the event it corrects (" +
                   get_text(ev->get(), 0, 3) + ")");
  }
  const std::string allocation_id = get_text(ev->get(), 0, 0);
  Transaction tx(c);
  if (Status s = tx.begin(); !s.ok()) return s.error();
  if (auto marked = c.exec(sql::mark_row_writer); !marked.ok()) return marked.error();
  auto alloc = lock_row(c, allocation_id);
  if (!alloc.ok()) return alloc.error();
  auto at = c.run(sql::adjustment_time, Params().text(allocation_id).opt_i64(injected_now()));
  if (!at.ok()) return at.error();
  const core::AllocationSnapshot& snap = alloc->snap;
  const core::AdjustmentPlan plan = core::plan_adjustment(
      snap.state, snap.agreement_state, snap.terms.allowance, snap.booked, a.delta);
  if (!plan.allowed) {
    return make_error(ErrorCode::conflict,
                      "the adjustment would make the allocation's booked tokens negative (booked " +
                          std::to_string(snap.booked.input) + "/" +
                          std::to_string(snap.booked.output) + ", adjustment " +
                          std::to_string(a.delta.input) + "/" + std::to_string(a.delta.output) +
                          ")");
  }
  UsageEventRow event{new_time_ordered_id("evt"),
                      allocation_id,
                      get_text(ev->get(), 0, 1),
                      get_text(ev->get(), 0, 2),
                      a.delta,
                      core::EventSource::adjustment,
                      core::Finality::confirmed,
                      a.evidence,
                      get_i64(at->get(), 0, 0),
                      a.event_id};
  auto ins = c.run(sql::insert_adjustment, Params()
                                               .text(event.id)
                                               .text(allocation_id)
                                               .i64(alloc->event_seq + 1)
                                               .text(a.event_id)
                                               .text(event.request_id)
                                               .text(event.provider_request_id)
                                               .i64(a.delta.input)
                                               .i64(a.delta.output)
                                               .text(a.evidence)
                                               .i64(event.booked_at)
                                               .i64(plan.booked_after.input)
                                               .i64(plan.booked_after.output)
                                               .text(alloc->agreement_id)
                                               .text(core::to_string(plan.agreement_state))
                                               .text(core::to_string(plan.state)));
  if (!ins.ok()) return ins.error();
  if (Status s = tx.commit(); !s.ok()) return s.error();
  return event;
}

}  // namespace cairva::store::pg
