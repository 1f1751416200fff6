#include "store/sqlite/writes.h"

#include <algorithm>

#include "base/assert.h"
#include "store/sqlite/limits.h"

namespace cairva::store::sqlite::writes {
namespace {

std::string_view str(auto v) { return core::to_string(v); }

}  // namespace

// ---------------------------------------------------------------- numbering

Result<Sequencer::Start> Sequencer::next_start(Db& db, std::string_view allocation_id) {
  if (!seq_) {
    auto s = db.cached("SELECT COALESCE(MAX(seq), 0) FROM requests");
    if (!s.ok()) return s.error();
    auto row = s->step();
    if (!row.ok()) return row.error();
    seq_ = s->col_i64(0);
  }
  int64_t* ordinal = last_ordinal_.find(allocation_id);
  if (ordinal == nullptr) {
    auto it = ordinals_.find(allocation_id);
    if (it == ordinals_.end()) {
      // The last start in the index's order: start_ordinal grows with it (migration 9).
      auto s = db.cached(
          "SELECT start_ordinal FROM requests WHERE allocation_id = ?"
          " ORDER BY started_at DESC, start_ordinal DESC LIMIT 1");
      if (!s.ok()) return s.error();
      s->text_ref(allocation_id);
      auto row = s->step();
      if (!row.ok()) return row.error();
      it = ordinals_.emplace(std::string(allocation_id), *row ? s->col_i64(0) : 0).first;
    }
    last_ordinal_ = {it->first, &it->second};
    ordinal = &it->second;
  }
  return Start{++*seq_, ++*ordinal};
}

Result<core::Tokens> Sequencer::next_totals(Db& db, std::string_view allocation_id,
                                            const core::Tokens& delta) {
  core::Tokens* totals = last_totals_.find(allocation_id);
  if (totals == nullptr) {
    auto it = totals_.find(allocation_id);
    if (it == totals_.end()) {
      auto s = db.cached(
          "SELECT cum_input, cum_output FROM usage_events WHERE allocation_id = ?"
          " ORDER BY booked_at DESC, seq DESC LIMIT 1");
      if (!s.ok()) return s.error();
      s->text_ref(allocation_id);
      auto row = s->step();
      if (!row.ok()) return row.error();
      const core::Tokens last = *row ? core::Tokens{s->col_i64(0), s->col_i64(1)} : core::Tokens{};
      it = totals_.emplace(std::string(allocation_id), last).first;
    }
    last_totals_ = {it->first, &it->second};
    totals = &it->second;
  }
  *totals = {totals->input + delta.input, totals->output + delta.output};
  return *totals;
}

void Sequencer::forget() {
  seq_.reset();
  last_ordinal_ = {};
  last_totals_ = {};
  ordinals_.clear();
  totals_.clear();
}

// ---------------------------------------------------------------- journaled records

Record insert_request(const RequestRow& r, std::string_view key_id) {
  return pack(InsertRequest{r.id, r.allocation_id, key_id, str(r.state), r.model, r.started_at,
                            r.stream ? 1 : 0, r.hold.input, r.hold.output});
}

static Status apply_insert_request(Db& db, const InsertRequest& r, Sequencer& numbers) {
  auto n = numbers.next_start(db, r.allocation_id);
  if (!n.ok()) return n.error();
  auto s = db.cached(
      "INSERT INTO requests (id, allocation_id, key_id, state, started_at, model, stream,"
      " hold_input, hold_output, seq, start_ordinal) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return s.error();
  s->text_ref(r.id).text_ref(r.allocation_id).text_ref(r.key_id).text_ref(r.state);
  s->i64(r.started_at).text_ref(r.model).i64(r.stream).i64(r.hold_input).i64(r.hold_output);
  s->i64(n->seq).i64(n->ordinal);
  return s->run();
}

Record set_states(const std::string& allocation_id, const std::string& agreement_id,
                  core::AllocationState state, core::AgreementState agreement_state) {
  return pack(SetStates{allocation_id, agreement_id, str(state), str(agreement_state)});
}

static Status apply_set_states(Db& db, const SetStates& r) {
  auto a = db.cached("UPDATE allocations SET state = ? WHERE id = ?");
  if (!a.ok()) return a.error();
  a->text_ref(r.state).text_ref(r.allocation_id);
  if (Status s = a->run(); !s.ok()) return s;
  auto g = db.cached("UPDATE agreements SET state = ? WHERE id = ?");
  if (!g.ok()) return g.error();
  g->text_ref(r.agreement_state).text_ref(r.agreement_id);
  return g->run();
}

static Status apply_mark_usage_pending(Db& db, const MarkUsagePending& r) {
  auto s = db.cached(
      "UPDATE requests SET state = 'usage_pending',"
      " provider_request_id = CASE WHEN ? = '' THEN provider_request_id ELSE ? END"
      " WHERE id = ? AND state = 'in_flight'");
  if (!s.ok()) return s.error();
  s->text_ref(r.provider_request_id).text_ref(r.provider_request_id).text_ref(r.request_id);
  return s->run();
}

Record book(const UsageEventRow& e) {
  return pack(Book{e.id, e.allocation_id, e.request_id, e.provider_request_id, str(e.source),
                   str(e.finality), e.evidence, e.tokens.input, e.tokens.output, e.booked_at});
}

Record book_reported(Book e) {
  e.source = str(core::EventSource::provider);
  e.finality = str(core::Finality::reported);
  return pack(e);
}

static void bind_event(Stmt& st, const Book& r, const core::Tokens& totals) {
  st.text_ref(r.id).text_ref(r.allocation_id).text_ref(r.request_id);
  st.text_ref(r.provider_request_id).i64(r.input).i64(r.output).text_ref(r.source);
  st.text_ref(r.finality).text_ref(r.evidence).i64(r.booked_at).i64(totals.input);
  st.i64(totals.output);
}

static Status apply_book_event(Db& db, const Book& r, Sequencer& numbers) {
  auto totals = numbers.next_totals(db, r.allocation_id, {r.input, r.output});
  if (!totals.ok()) return totals.error();
  auto ev = db.cached(
      "INSERT INTO usage_events (id, allocation_id, request_id, provider_request_id,"
      " input_tokens, output_tokens, source, finality, evidence, booked_at, cum_input, cum_output)"
      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!ev.ok()) return ev.error();
  bind_event(*ev, r, *totals);
  return ev->run();
}

// The request booked: by its own event, or as a duplicate of another.
static Status book_request(Db& db, std::string_view request_id,
                           std::string_view provider_request_id, int64_t finished_at) {
  auto rq = db.cached(
      "UPDATE requests SET state = 'booked', finished_at = ?, provider_request_id = ?"
      " WHERE id = ?");
  if (!rq.ok()) return rq.error();
  rq->i64(finished_at).text_ref(provider_request_id).text_ref(request_id);
  return rq->run();
}

static Status raise_used(Db& db, std::string_view allocation_id, int64_t input, int64_t output) {
  auto al = db.cached(
      "UPDATE allocations SET used_input = used_input + ?, used_output = used_output + ? WHERE id "
      "= ?");
  if (!al.ok()) return al.error();
  al->i64(input).i64(output).text_ref(allocation_id);
  return al->run();
}

static Status apply_book(Db& db, const Book& r, Sequencer& numbers) {
  if (Status s = apply_book_event(db, r, numbers); !s.ok()) return s;
  if (Status s = book_request(db, r.request_id, r.provider_request_id, r.booked_at); !s.ok()) {
    return s;
  }
  return raise_used(db, r.allocation_id, r.input, r.output);
}

static Status apply_fail_request(Db& db, const FailRequest& r) {
  auto s = db.cached(
      "UPDATE requests SET state = 'failed', finished_at = ?,"
      " provider_request_id = CASE WHEN ? = '' THEN provider_request_id ELSE ? END WHERE id = ?");
  if (!s.ok()) return s.error();
  s->i64(r.finished_at).text_ref(r.provider_request_id).text_ref(r.provider_request_id);
  s->text_ref(r.request_id);
  return s->run();
}

Record insert_conflict(const ConflictRow& c) {
  return pack(InsertConflict{c.id, c.allocation_id, c.request_id, c.provider_request_id,
                             c.reported.input, c.reported.output, c.booked.input, c.booked.output,
                             c.recorded_at});
}

static Status apply_insert_conflict(Db& db, const InsertConflict& r) {
  auto s = db.cached(
      "INSERT INTO conflicts (id, allocation_id, request_id, provider_request_id, reported_input,"
      " reported_output, booked_input, booked_output, recorded_at) VALUES (?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return s.error();
  s->text_ref(r.id).text_ref(r.allocation_id).text_ref(r.request_id);
  s->text_ref(r.provider_request_id).i64(r.reported_input).i64(r.reported_output);
  s->i64(r.booked_input).i64(r.booked_output).i64(r.recorded_at);
  return s->run();
}

static Status apply_keep_reported(Db& db, const KeepReported& r) {
  auto s = db.cached(
      "UPDATE requests SET reported_input = ?, reported_output = ?,"
      " reported_provider_request_id = ? WHERE id = ?");
  if (!s.ok()) return s.error();
  s->i64(r.input).i64(r.output).text_ref(r.provider_request_id).text_ref(r.request_id);
  return s->run();
}

static Status apply_note_provider_id(Db& db, const NoteProviderId& r) {
  auto s =
      db.cached("UPDATE requests SET provider_request_id = ? WHERE id = ? AND state = 'in_flight'");
  if (!s.ok()) return s.error();
  s->text_ref(r.provider_request_id).text_ref(r.request_id);
  return s->run();
}

// One record alone (replay): its numbers are read from what the tables hold.
Status apply(Db& db, const Record& r) {
  Sequencer numbers;
  switch (r.kind) {
    case Record::Kind::insert_request:
      return apply_insert_request(db, r.as<InsertRequest>(), numbers);
    case Record::Kind::book:
      return apply_book(db, r.as<Book>(), numbers);
    case Record::Kind::book_as_duplicate: {
      const auto d = r.as<BookAsDuplicate>();
      return book_request(db, d.request_id, d.provider_request_id, d.finished_at);
    }
    case Record::Kind::fail_request:
      return apply_fail_request(db, r.as<FailRequest>());
    case Record::Kind::mark_usage_pending:
      return apply_mark_usage_pending(db, r.as<MarkUsagePending>());
    case Record::Kind::insert_conflict:
      return apply_insert_conflict(db, r.as<InsertConflict>());
    case Record::Kind::set_states:
      return apply_set_states(db, r.as<SetStates>());
    case Record::Kind::keep_reported:
      return apply_keep_reported(db, r.as<KeepReported>());
    case Record::Kind::note_provider_id:
      return apply_note_provider_id(db, r.as<NoteProviderId>());
  }
  return make_error(ErrorCode::internal_error,
                    "oplog: unknown record kind " + std::to_string(static_cast<int>(r.kind)));
}

// ---------------------------------------------------------------- coalesced application

Coalescer::Start* Coalescer::held(std::string_view request_id) {
  const auto it = start_of_.find(request_id);
  return it == start_of_.end() ? nullptr : &starts_[it->second];
}

namespace {

// INSERTs of 1 to apply_rows_per_insert rows, built once per process (the connection's
// cache keys statements by address).
using MultiRowSql = std::array<std::string, apply_rows_per_insert>;

MultiRowSql multi_row_sql(std::string_view head, std::string_view row) {
  MultiRowSql out;
  std::string values(row);
  for (auto& one : out) {
    one = std::string(head) + values;
    values += ",";
    values += row;
  }
  return out;
}

const char* insert_requests_sql(size_t rows) {
  static const MultiRowSql sql = multi_row_sql(
      "INSERT INTO requests (id, allocation_id, key_id, state, started_at, model, stream,"
      " hold_input, hold_output, finished_at, provider_request_id, seq, start_ordinal) VALUES ",
      "(?,?,?,?,?,?,?,?,?,?,?,?,?)");
  CAIRVA_ASSERT(rows >= 1 && rows <= sql.size());
  return sql[rows - 1].c_str();
}

const char* insert_events_sql(size_t rows) {
  static const MultiRowSql sql = multi_row_sql(
      "INSERT INTO usage_events (id, allocation_id, request_id, provider_request_id,"
      " input_tokens, output_tokens, source, finality, evidence, booked_at, cum_input, cum_output)"
      " VALUES ",
      "(?,?,?,?,?,?,?,?,?,?,?,?)");
  CAIRVA_ASSERT(rows >= 1 && rows <= sql.size());
  return sql[rows - 1].c_str();
}

}  // namespace

Status Coalescer::write(Db& db, std::span<Start* const> rows) {
  auto st = db.cached(insert_requests_sql(rows.size()));
  if (!st.ok()) return st.error();
  for (Start* s : rows) {
    const InsertRequest& r = s->row;
    st->text_ref(r.id).text_ref(r.allocation_id).text_ref(r.key_id).text_ref(r.state);
    st->i64(r.started_at).text_ref(r.model).i64(r.stream).i64(r.hold_input).i64(r.hold_output);
    st->opt_i64(s->finished_at).text_ref(s->provider_request_id);
    st->i64(s->numbers.seq).i64(s->numbers.ordinal);
  }
  Status out = st->run();
  if (out.ok()) {
    for (Start* s : rows) s->written = true;
    return out;
  }
  if (rows.size() == 1) {
    failed_op_ = rows[0]->op;
    return out;
  }
  // The statement failed as a whole and left nothing: row by row names the op at fault.
  for (Start* s : rows) {
    if (Status one = write(db, std::span<Start* const>(&s, 1)); !one.ok()) return one;
  }
  return out;
}

Status Coalescer::write_now(Db& db, Start& s) {
  start_of_.erase(s.row.id);
  Start* one = &s;
  return write(db, std::span<Start* const>(&one, 1));
}

Status Coalescer::write(Db& db, std::span<const Event> rows) {
  auto st = db.cached(insert_events_sql(rows.size()));
  if (!st.ok()) return st.error();
  for (const Event& e : rows) bind_event(*st, e.row, e.totals);
  Status out = st->run();
  if (out.ok()) return out;
  if (rows.size() == 1) {
    failed_op_ = rows[0].op;
    return out;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (Status one = write(db, rows.subspan(i, 1)); !one.ok()) return one;
  }
  return out;
}

Status Coalescer::add(Db& db, const Record& r, size_t op) {
  failed_op_ = op;
  // A start held back takes its first end into the row it will insert; one already ended
  // (a late booking after usage_pending, in the same transaction) is written first, and
  // the record then applies to it as to any row.
  auto end_held = [&](std::string_view request_id, std::string_view provider_request_id,
                      std::string_view state,
                      std::optional<int64_t> finished_at) -> std::optional<Status> {
    Start* s = held(request_id);
    if (s == nullptr) return std::nullopt;
    if (s->ended) {
      if (Status out = write_now(db, *s); !out.ok()) return out;
      return std::nullopt;
    }
    s->ended = true;
    s->row.state = state;
    if (finished_at) s->finished_at = finished_at;
    if (!provider_request_id.empty()) s->provider_request_id = provider_request_id;
    return Status{};
  };
  // A request's end recorded without an event: into its start held back, or on its row.
  auto end = [&](const auto& e, std::string_view state, bool finishes) -> Status {
    const auto finished_at = finishes ? std::optional(e.finished_at) : std::nullopt;
    if (auto s = end_held(e.request_id, e.provider_request_id, state, finished_at)) return *s;
    return apply(db, r);
  };
  switch (r.kind) {
    case Record::Kind::insert_request: {
      // Numbered now, in record order, though written later (or in its final state).
      const auto row = r.as<InsertRequest>();
      auto n = sequencer_.next_start(db, row.allocation_id);
      if (!n.ok()) return n.error();
      start_of_[row.id] = starts_.size();
      starts_.push_back({row, *n, std::nullopt, {}, op, false, false});
      return {};
    }
    case Record::Kind::book: {
      const auto b = r.as<Book>();
      auto& u = used_[b.allocation_id];
      u.input += b.input;
      u.output += b.output;
      u.op = op;
      // Its event is numbered now and inserted at flush(), in booking order: nothing
      // before that reads an event this transaction wrote (the Sequencer counts on).
      auto totals = sequencer_.next_totals(db, b.allocation_id, {b.input, b.output});
      if (!totals.ok()) return totals.error();
      events_.push_back({b, *totals, op});
      if (auto s = end_held(b.request_id, b.provider_request_id, "booked", b.booked_at)) return *s;
      return book_request(db, b.request_id, b.provider_request_id, b.booked_at);
    }
    case Record::Kind::book_as_duplicate:
      return end(r.as<BookAsDuplicate>(), "booked", true);
    case Record::Kind::fail_request:
      return end(r.as<FailRequest>(), "failed", true);
    case Record::Kind::mark_usage_pending:
      return end(r.as<MarkUsagePending>(), "usage_pending", false);
    case Record::Kind::note_provider_id: {
      // A start held back and not ended takes the id into its insert (its end, if any,
      // comes later); an ended one is written, and the note applies to it as to any row.
      const auto note = r.as<NoteProviderId>();
      Start* s = held(note.request_id);
      if (s != nullptr && !s->ended) {
        s->provider_request_id = note.provider_request_id;
        return {};
      }
      if (s != nullptr) {
        if (Status out = write_now(db, *s); !out.ok()) return out;
      }
      return apply(db, r);
    }
    case Record::Kind::keep_reported:
      // Its request's row must exist: a start held back is written first, as it stands.
      if (Start* s = held(r.as<KeepReported>().request_id)) {
        if (Status out = write_now(db, *s); !out.ok()) return out;
      }
      return apply(db, r);
    case Record::Kind::insert_conflict:
    case Record::Kind::set_states:
      return apply(db, r);
  }
  return apply(db, r);  // unknown kinds fail there
}

Status Coalescer::flush(Db& db) {
  // Rows held back are written now, several per statement: a statement's fixed cost (a
  // cursor on each of the table's B-trees; for requests, four of them partial indexes a
  // booked row never enters) is paid once per apply_rows_per_insert rows.
  std::array<Start*, apply_rows_per_insert> group{};
  size_t grouped = 0;
  for (auto& s : starts_) {
    if (s.written) continue;
    group[grouped++] = &s;
    if (grouped < group.size()) continue;
    if (Status out = write(db, group); !out.ok()) return out;
    grouped = 0;
  }
  if (grouped > 0) {
    const std::span<Start* const> rest(group.data(), grouped);
    if (Status out = write(db, rest); !out.ok()) return out;
  }
  const std::span<const Event> events(events_);
  for (size_t i = 0; i < events.size(); i += apply_rows_per_insert) {
    const size_t n = std::min(apply_rows_per_insert, events.size() - i);
    if (Status out = write(db, events.subspan(i, n)); !out.ok()) return out;
  }
  events_.clear();
  starts_.clear();
  start_of_.clear();
  for (const auto& [allocation, u] : used_) {
    if (Status out = raise_used(db, allocation, u.input, u.output); !out.ok()) {
      failed_op_ = u.op;
      return out;
    }
  }
  used_.clear();
  // What runs next (an admin closure) may write rows the numbers have not seen.
  sequencer_.forget();
  return {};
}

// ---------------------------------------------------------------- admin writes (not journaled)

Apply insert_agreement(const AgreementRow& a, const std::string& allocation_id,
                       core::AllocationState state, const std::string& key_id,
                       const std::string& key_hash) {
  return [a, allocation_id, state, key_id, key_hash](Db& db) -> Status {
    auto s = db.cached(
        "INSERT INTO agreements (id, supplier, buyer, provider, starts_at, ends_at,"
        " requests_per_minute, tokens_per_minute, max_concurrency, input_tokens, output_tokens,"
        " state, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s.ok()) return s.error();
    const auto& t = a.terms;
    s->text(a.id).text(a.supplier).text(a.buyer).text(a.provider);
    s->i64(t.window.starts_at).i64(t.window.ends_at);
    s->i64(t.limits.requests_per_minute)
        .i64(t.limits.tokens_per_minute)
        .i64(t.limits.max_concurrency);
    s->i64(t.allowance.input).i64(t.allowance.output).text(str(a.state)).i64(a.created_at);
    if (Status r = s->run(); !r.ok()) return r;
    for (size_t i = 0; i < a.models.size(); ++i) {
      auto m =
          db.cached("INSERT INTO agreement_models (agreement_id, position, model) VALUES (?,?,?)");
      if (!m.ok()) return m.error();
      m->text(a.id).i64(static_cast<int64_t>(i)).text(a.models[i]);
      if (Status r = m->run(); !r.ok()) return r;
    }
    for (size_t i = 0; i < a.service_tiers.size(); ++i) {
      auto m = db.cached(
          "INSERT INTO agreement_service_tiers (agreement_id, position, tier) VALUES (?,?,?)");
      if (!m.ok()) return m.error();
      m->text(a.id).i64(static_cast<int64_t>(i)).text(a.service_tiers[i]);
      if (Status r = m->run(); !r.ok()) return r;
    }
    auto al = db.cached("INSERT INTO allocations (id, agreement_id, state) VALUES (?,?,?)");
    if (!al.ok()) return al.error();
    al->text(allocation_id).text(a.id).text(str(state));
    if (Status r = al->run(); !r.ok()) return r;
    return insert_key(key_id, allocation_id, key_hash, a.created_at)(db);
  };
}

Apply insert_key(const std::string& key_id, const std::string& allocation_id,
                 const std::string& key_hash, UnixMicros now) {
  return [=](Db& db) -> Status {
    auto s = db.cached(
        "INSERT INTO api_keys (id, allocation_id, secret_hash, created_at) VALUES (?,?,?,?)");
    if (!s.ok()) return s.error();
    s->text(key_id).text(allocation_id).text(key_hash).i64(now);
    return s->run();
  };
}

Apply insert_adjustment(const UsageEventRow& e) {
  return [e](Db& db) -> Status {
    Sequencer numbers;  // inside the applier's transaction, after its records are written
    auto totals = numbers.next_totals(db, e.allocation_id, e.tokens);
    if (!totals.ok()) return totals.error();
    auto s = db.cached(
        "INSERT INTO usage_events (id, allocation_id, request_id, provider_request_id,"
        " input_tokens, output_tokens, source, finality, evidence, booked_at, corrects, cum_input,"
        " cum_output) VALUES (?,?,?,?,?,?,'adjustment','confirmed',?,?,?,?,?)");
    if (!s.ok()) return s.error();
    s->text(e.id).text(e.allocation_id).text(e.request_id).text(e.provider_request_id);
    s->i64(e.tokens.input).i64(e.tokens.output).text(e.evidence).i64(e.booked_at).text(e.corrects);
    s->i64(totals->input).i64(totals->output);
    if (Status r = s->run(); !r.ok()) return r;
    return raise_used(db, e.allocation_id, e.tokens.input, e.tokens.output);
  };
}

Apply insert_conflicts(std::vector<ConflictRow> rows, std::shared_ptr<int64_t> recorded) {
  return [rows = std::move(rows), recorded = std::move(recorded)](Db& db) -> Status {
    for (const ConflictRow& c : rows) {
      auto seen = db.cached(
          "SELECT 1 FROM conflicts WHERE allocation_id = ? AND provider_request_id = ?"
          " AND reported_input = ? AND reported_output = ? LIMIT 1");
      if (!seen.ok()) return seen.error();
      seen->text(c.allocation_id)
          .text(c.provider_request_id)
          .i64(c.reported.input)
          .i64(c.reported.output);
      auto row = seen->step();
      if (!row.ok()) return row.error();
      if (*row) continue;
      if (Status r = apply(db, insert_conflict(c)); !r.ok()) return r;
      ++*recorded;
    }
    return {};
  };
}

Apply revoke_key(const std::string& key_id) {
  return [=](Db& db) -> Status {
    auto s = db.cached("UPDATE api_keys SET revoked = 1 WHERE id = ?");
    if (!s.ok()) return s.error();
    s->text(key_id);
    return s->run();
  };
}

}  // namespace cairva::store::sqlite::writes
