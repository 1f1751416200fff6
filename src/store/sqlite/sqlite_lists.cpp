// SqliteStore's listings (SPEC-CONSOLE §1), read from the tables after a writer flush.
//
// Orders (schema.cpp, migration 9): across allocations, the order the one applier wrote the
// rows (requests.seq, the rowid of events, conflicts, allocations and keys); within one
// allocation, requests by (started_at, start_ordinal) and events by (booked_at, seq), which
// the allocation's lock and its never-backwards times keep in that same written order. So a
// row written after a page was read always sorts after that page.
#include <algorithm>
#include <limits>

#include "store/sqlite/row_sql.h"
#include "store/sqlite/sqlite_store.h"

namespace cairva::store::sqlite {
namespace {

constexpr int64_t time_min = std::numeric_limits<int64_t>::min();
constexpr int64_t time_max = std::numeric_limits<int64_t>::max();

Error invalid(std::string message) {
  return make_error(ErrorCode::invalid_request, std::move(message));
}

// Steps `s` (which selects at most limit + 1 rows) into a page.
template <class T, class Parse>
Result<Paged<T>> collect(Stmt& s, size_t limit, Parse parse) {
  Paged<T> out;
  for (;;) {
    auto row = s.step();
    if (!row.ok()) return row.error();
    if (!*row) return out;
    if (out.data.size() == limit) {
      out.has_more = true;
      return out;
    }
    out.data.push_back(parse(s));
  }
}

// The position `after` names: the columns `sql` selects for it, or invalid_request.
Result<Stmt> position(Db& db, const char* sql, const std::string& id, const char* what) {
  auto s = db.prepare(sql);
  if (!s.ok()) return s.error();
  s->text(id);
  auto row = s->step();
  if (!row.ok()) return row.error();
  if (!*row) return invalid(std::string("after: unknown ") + what + " id " + id);
  return s;
}

// A state filter's terms, naming the partial index its rows are in (SQLite uses a partial
// index only when the query repeats its condition).
std::string state_terms(const std::optional<core::RequestState>& state) {
  if (!state) return "";
  std::string t = " AND state = '" + std::string(core::to_string(*state)) + "'";
  if (*state == core::RequestState::failed || *state == core::RequestState::usage_pending) {
    t += " AND (state = 'failed' OR state = 'usage_pending')";
  }
  return t;
}

// The index that holds the state's rows, for a listing of one allocation (by start) or of
// every allocation (by seq). Booked requests are most rows: no index narrows them.
std::string index_for(const std::optional<core::RequestState>& state, bool one_allocation) {
  if (!state) return "";
  switch (*state) {
    case core::RequestState::in_flight:
      return " INDEXED BY requests_in_flight";
    case core::RequestState::failed:
    case core::RequestState::usage_pending:
      return one_allocation ? " INDEXED BY requests_unsettled"
                            : " INDEXED BY requests_unsettled_seq";
    case core::RequestState::booked:
      return "";
  }
  return "";
}

}  // namespace

Result<Paged<RequestRow>> SqliteStore::list_requests(const RequestFilter& f) {
  return read<Paged<RequestRow>>([&](Db& db) -> Result<Paged<RequestRow>> {
    const size_t limit = page_rows(f.limit);
    const int64_t from = f.from.value_or(time_min);
    const int64_t to = f.to.value_or(time_max);
    const std::string table =
        std::string(request_columns) + index_for(f.state, f.allocation_id.has_value());
    if (f.allocation_id) {
      int64_t after_time = time_min, after_ordinal = 0;
      if (f.after) {
        auto p = position(
            db, "SELECT allocation_id, started_at, start_ordinal FROM requests WHERE id = ?",
            *f.after, "request");
        if (!p.ok()) return p.error();
        if (p->col_text(0) != *f.allocation_id) {
          return invalid("after: request " + *f.after + " is not a request of " + *f.allocation_id);
        }
        after_time = p->col_i64(1);
        after_ordinal = p->col_i64(2);
      }
      auto s = db.prepare(table +
                          " WHERE allocation_id = ?1 AND (started_at, start_ordinal) > (?2, ?3)"
                          " AND started_at >= ?4 AND started_at < ?5" +
                          state_terms(f.state) + " ORDER BY started_at, start_ordinal LIMIT ?6");
      if (!s.ok()) return s.error();
      s->text(*f.allocation_id).i64(after_time).i64(after_ordinal).i64(from).i64(to);
      s->i64(static_cast<int64_t>(limit) + 1);
      return collect<RequestRow>(*s, limit, parse_request);
    }
    int64_t after_seq = 0;
    if (f.after) {
      auto p = position(db, "SELECT seq FROM requests WHERE id = ?", *f.after, "request");
      if (!p.ok()) return p.error();
      after_seq = p->col_i64(0);
    }
    auto s = db.prepare(table + " WHERE seq > ?1 AND started_at >= ?2 AND started_at < ?3" +
                        state_terms(f.state) + " ORDER BY seq LIMIT ?4");
    if (!s.ok()) return s.error();
    s->i64(after_seq).i64(from).i64(to).i64(static_cast<int64_t>(limit) + 1);
    return collect<RequestRow>(*s, limit, parse_request);
  });
}

Result<Paged<UsageEventRow>> SqliteStore::list_events(const EventFilter& f) {
  return read<Paged<UsageEventRow>>([&](Db& db) -> Result<Paged<UsageEventRow>> {
    const size_t limit = page_rows(f.limit);
    const int64_t from = f.from.value_or(time_min);
    const int64_t to = f.to.value_or(time_max);
    auto p =
        f.after
            ? position(db, "SELECT allocation_id, booked_at, seq FROM usage_events WHERE id = ?",
                       *f.after, "event")
            : Result<Stmt>(make_error(ErrorCode::not_found, "no position"));
    if (f.after && !p.ok()) return p.error();
    if (f.allocation_id) {
      int64_t after_time = time_min, after_seq = 0;
      if (f.after) {
        if (p->col_text(0) != *f.allocation_id) {
          return invalid("after: event " + *f.after + " is not an event of " + *f.allocation_id);
        }
        after_time = p->col_i64(1);
        after_seq = p->col_i64(2);
      }
      auto s =
          db.prepare(std::string(event_columns) +
                     " WHERE allocation_id = ?1 AND (booked_at, seq) > (?2, ?3) AND booked_at >= ?4"
                     " AND booked_at < ?5 ORDER BY booked_at, seq LIMIT ?6");
      if (!s.ok()) return s.error();
      s->text(*f.allocation_id).i64(after_time).i64(after_seq).i64(from).i64(to);
      s->i64(static_cast<int64_t>(limit) + 1);
      return collect<UsageEventRow>(*s, limit, parse_event);
    }
    const int64_t after_seq = f.after ? p->col_i64(2) : 0;
    auto s =
        db.prepare(std::string(event_columns) +
                   " WHERE seq > ?1 AND booked_at >= ?2 AND booked_at < ?3 ORDER BY seq LIMIT ?4");
    if (!s.ok()) return s.error();
    s->i64(after_seq).i64(from).i64(to).i64(static_cast<int64_t>(limit) + 1);
    return collect<UsageEventRow>(*s, limit, parse_event);
  });
}

Result<Paged<ConflictRow>> SqliteStore::list_conflicts(const ConflictFilter& f) {
  return read<Paged<ConflictRow>>([&](Db& db) -> Result<Paged<ConflictRow>> {
    const size_t limit = page_rows(f.limit);
    int64_t after_seq = 0;
    if (f.after) {
      auto p = position(db, "SELECT allocation_id, seq FROM conflicts WHERE id = ?", *f.after,
                        "conflict");
      if (!p.ok()) return p.error();
      if (f.allocation_id && p->col_text(0) != *f.allocation_id) {
        return invalid("after: conflict " + *f.after + " is not a conflict of " + *f.allocation_id);
      }
      after_seq = p->col_i64(1);
    }
    const std::string columns =
        "SELECT id, allocation_id, request_id, provider_request_id, reported_input, "
        "reported_output,"
        " booked_input, booked_output, recorded_at FROM conflicts";
    auto s = db.prepare(
        columns + (f.allocation_id ? " WHERE allocation_id = ?2 AND seq > ?1" : " WHERE seq > ?1") +
        " ORDER BY seq LIMIT ?3");
    if (!s.ok()) return s.error();
    s->i64(after_seq);
    if (f.allocation_id) {
      s->text(*f.allocation_id);
    } else {
      s->null();
    }
    s->i64(static_cast<int64_t>(limit) + 1);
    return collect<ConflictRow>(*s, limit, [](Stmt& r) {
      return ConflictRow{r.col_text(0),
                         r.col_text(1),
                         r.col_text(2),
                         r.col_text(3),
                         {r.col_i64(4), r.col_i64(5)},
                         {r.col_i64(6), r.col_i64(7)},
                         r.col_i64(8)};
    });
  });
}

// Agreements and allocations: the allocations table's written order gives the ids (the
// supplier and buyer filters applied there); memory (authoritative for states and numbers)
// gives the rows, and the state filter. A row written but not yet in memory (its creation is
// finishing) ends the page there: the next page starts with it.
Result<Paged<AllocationStatus>> SqliteStore::list_allocations_page(const AllocationFilter& f) {
  const size_t limit = page_rows(f.limit);
  // Without a state filter every row read is shown: one read of limit + 1 rows decides.
  const size_t chunk = f.state ? std::max(limit + 1, allocation_filter_chunk_rows) : limit + 1;
  struct Listed {
    std::string id;
    int64_t rowid = 0;
  };
  int64_t after = 0;
  if (f.after) {
    auto p = read<int64_t>([&](Db& db) -> Result<int64_t> {
      auto s = position(db, "SELECT rowid FROM allocations WHERE id = ?", *f.after, "allocation");
      if (!s.ok()) return s.error();
      return s->col_i64(0);
    });
    if (!p.ok()) return p.error();
    after = *p;
  }
  Paged<AllocationStatus> out;
  for (;;) {
    auto ids = read<Paged<Listed>>([&](Db& db) -> Result<Paged<Listed>> {
      auto s = db.prepare(
          "SELECT al.id, al.rowid FROM allocations al JOIN agreements ag ON ag.id = al.agreement_id"
          " WHERE al.rowid > ?1 AND (?2 IS NULL OR ag.supplier = ?2) AND (?3 IS NULL OR ag.buyer = "
          "?3)"
          " ORDER BY al.rowid LIMIT ?4");
      if (!s.ok()) return s.error();
      s->i64(after);
      for (const auto& v : {f.supplier, f.buyer}) {
        if (v) {
          s->text(*v);
        } else {
          s->null();
        }
      }
      s->i64(static_cast<int64_t>(chunk) + 1);
      return collect<Listed>(*s, chunk, [](Stmt& r) {
        return Listed{r.col_text(0), r.col_i64(1)};
      });
    });
    if (!ids.ok()) return ids.error();
    for (const auto& row : ids->data) {
      const auto a = find(row.id);
      if (!a) {
        out.has_more = true;
        return out;
      }
      AllocationStatus status;
      {
        std::lock_guard lock(a->mu);
        const UnixMicros now = clock_->now();
        sweep_locked(*a, now);
        status = status_locked(*a, now);
      }
      after = row.rowid;
      if (f.state && status.snapshot.state != *f.state) continue;
      if (out.data.size() == limit) {
        out.has_more = true;
        return out;
      }
      out.data.push_back(std::move(status));
    }
    if (!ids->has_more) return out;
  }
}

Result<Paged<AgreementRow>> SqliteStore::list_agreements(const PageFilter& f) {
  const size_t limit = page_rows(f.limit);
  auto ids = read<Paged<std::string>>([&](Db& db) -> Result<Paged<std::string>> {
    int64_t after = 0;
    if (f.after) {
      auto p = position(db, "SELECT rowid FROM allocations WHERE agreement_id = ?", *f.after,
                        "agreement");
      if (!p.ok()) return p.error();
      after = p->col_i64(0);
    }
    auto s =
        db.prepare("SELECT agreement_id FROM allocations WHERE rowid > ?1 ORDER BY rowid LIMIT ?2");
    if (!s.ok()) return s.error();
    s->i64(after).i64(static_cast<int64_t>(limit) + 1);
    return collect<std::string>(*s, limit, [](Stmt& r) { return r.col_text(0); });
  });
  if (!ids.ok()) return ids.error();
  Paged<AgreementRow> out;
  out.has_more = ids->has_more;
  for (const auto& id : ids->data) {
    const auto a = find_by_agreement(id);
    if (!a) {
      out.has_more = true;
      break;
    }
    std::lock_guard lock(a->mu);
    out.data.push_back(agreement_locked(*a));
  }
  return out;
}

Result<Paged<ApiKeyRow>> SqliteStore::list_keys(const std::string& allocation_id,
                                                const PageFilter& f) {
  if (!find(allocation_id))
    return make_error(ErrorCode::not_found, "allocation not found: " + allocation_id);
  return read<Paged<ApiKeyRow>>([&](Db& db) -> Result<Paged<ApiKeyRow>> {
    const size_t limit = page_rows(f.limit);
    int64_t after = 0;
    if (f.after) {
      auto p =
          position(db, "SELECT rowid, allocation_id FROM api_keys WHERE id = ?", *f.after, "key");
      if (!p.ok()) return p.error();
      if (p->col_text(1) != allocation_id) {
        return invalid("after: key " + *f.after + " is not a key of " + allocation_id);
      }
      after = p->col_i64(0);
    }
    auto s = db.prepare(
        "SELECT id, allocation_id, revoked, created_at FROM api_keys WHERE allocation_id = ?1 AND "
        "rowid > ?2"
        " ORDER BY rowid LIMIT ?3");
    if (!s.ok()) return s.error();
    s->text(allocation_id).i64(after).i64(static_cast<int64_t>(limit) + 1);
    return collect<ApiKeyRow>(*s, limit, [](Stmt& r) {
      return ApiKeyRow{r.col_text(0), r.col_text(1), r.col_i64(2) != 0, r.col_i64(3)};
    });
  });
}

}  // namespace cairva::store::sqlite
