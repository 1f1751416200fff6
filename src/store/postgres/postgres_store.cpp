// PostgresStore: opening, the asynchronous plumbing, and the request path (authenticate,
// admit, settle, status, sweep). Admin calls: postgres_admin.cpp; audit: postgres_audit.cpp.
#include "store/postgres/postgres_store.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "base/ids.h"
#include "core/ledger.h"
#include "core/limits.h"
#include "store/postgres/codec.h"
#include "store/postgres/console_statements.h"
#include "store/postgres/schema.h"
#include "store/postgres/statements.h"
#include "store/postgres/tx_helpers.h"
#include "store/usage_series.h"

namespace cairva::store::pg {
namespace {

// The event under a provider request id (sql::booked_event_by_provider_id): its counts and request.
struct BookedUnderId {
  core::Tokens counts;
  std::string request_id;
};

}  // namespace

PostgresStore::PostgresStore(const StoreOptions& options, std::shared_ptr<const Clock> clock)
    : options_(options),
      clock_(std::move(clock)),
      pool_(options.url, options.pool_size),
      workers_(std::clamp(options.pool_size, 1, async_worker_threads_max)) {
  CAIRVA_ASSERT(clock_ != nullptr);
}

PostgresStore::~PostgresStore() = default;

Result<std::unique_ptr<PostgresStore>> PostgresStore::open(const StoreOptions& options,
                                                           std::shared_ptr<const Clock> clock) {
  std::unique_ptr<PostgresStore> store(new PostgresStore(options, std::move(clock)));
  if (options.migrate) {
    // A connection of its own for the store's life: its lock tells newer gateways this one
    // serves (schema.h, hold_gateway_lock). Taken before the migrations are checked, so that
    // a newer gateway migrating meanwhile either sees it or is seen by its check.
    auto presence = Connection::open(options.url);
    if (!presence.ok()) return presence.error();
    if (Status held = hold_gateway_lock(**presence); !held.ok()) return held.error();
    store->presence_ = std::move(presence).value();
  }
  {
    auto lease = store->pool_.acquire();
    if (!lease.ok()) return lease.error();
    if (options.migrate) {
      if (Status m = migrate(**lease); !m.ok()) return m.error();
    } else {
      auto version = schema_version(**lease);
      if (!version.ok()) return version.error();
      // An older audit would miss what a newer schema adds (adjustments count toward the
      // conservation it checks): only the matching version audits.
      if (*version > schema_version_latest()) {
        return make_error(
            ErrorCode::store_unavailable,
            "postgres: the schema is at version " + std::to_string(*version) +
                ", newer than this cairva audits (" + std::to_string(schema_version_latest()) +
                "): run `cairva audit` of the version that migrated it (nothing was changed)");
      }
      if (*version != schema_version_latest()) {
        return make_error(ErrorCode::store_unavailable,
                          "postgres: the schema is at version " + std::to_string(*version) +
                              ", this cairva audits version " +
                              std::to_string(schema_version_latest()) +
                              " (run `cairva serve` of this version once to migrate)");
      }
    }
  }
  return store;
}

std::optional<UnixMicros> PostgresStore::injected_now() const {
  if (options_.use_database_clock) return std::nullopt;
  return clock_->now();
}

template <class T, class F>
void PostgresStore::run_async(Callback<T> done, F work) {
  auto job = [this, done, work = std::move(work)]() mutable {
    Result<T> r = with_connection<T>(work);
    done(std::move(r));  // after COMMIT (or failure), holding no lock
  };
  if (!workers_.post(std::move(job))) {
    done(make_error(ErrorCode::store_unavailable, "postgres: store queue full"));
  }
}

// ------------------------------------------------------------------ request path

void PostgresStore::authenticate(const std::string& key_secret_hash, Callback<KeyGrant> done) {
  run_async<KeyGrant>(std::move(done), [this, key_secret_hash](Connection& c) {
    Result<KeyGrant> r = authenticate_on(c, key_secret_hash);
    std::lock_guard lock(grants_mu_);
    if (!r.ok()) {
      grants_.erase(key_secret_hash);
    } else {
      if (grants_.size() >= key_grants_cached_max) grants_.clear();
      grants_.insert_or_assign(key_secret_hash, *r);
    }
    return r;
  });
}

void PostgresStore::authenticate_for_admission(const std::string& key_secret_hash,
                                               Callback<KeyGrant> done) {
  std::optional<KeyGrant> cached;
  {
    std::lock_guard lock(grants_mu_);
    if (auto it = grants_.find(key_secret_hash); it != grants_.end()) cached = it->second;
  }
  if (!cached) {
    authenticate(key_secret_hash, std::move(done));
    return;
  }
  cached->provisional = true;
  done(std::move(*cached));
}

void PostgresStore::forget_key(const std::string& key_id) {
  std::lock_guard lock(grants_mu_);
  std::erase_if(grants_, [&](const auto& entry) { return entry.second.key_id == key_id; });
}

Result<KeyGrant> PostgresStore::authenticate_on(Connection& c, const std::string& hash) {
  auto r = c.run(sql::authenticate, Params().text(hash));
  if (!r.ok()) return r.error();
  if (rows(*r) == 0 || get_bool(r->get(), 0, 2)) {
    return make_error(ErrorCode::invalid_api_key, "invalid API key");
  }
  const PGresult* res = r->get();
  KeyGrant g;
  g.key_id = get_text(res, 0, 0);
  g.allocation_id = get_text(res, 0, 1);
  g.provider = get_text(res, 0, 3);
  g.models = split_models(get_text(res, 0, 4));
  g.limits = {get_i64(res, 0, 5), get_i64(res, 0, 6), get_i64(res, 0, 7)};
  g.service_tiers = split_models(get_text(res, 0, 8));
  return g;
}

namespace {

// BEGIN, the writer's mark (console_statements.h: before the transaction has an id), then
// `steps`, in one round trip; one result per step of `steps`.
Result<std::vector<PgResult>> begin_writing(Transaction& tx, std::vector<Connection::Step> steps) {
  steps.insert(steps.begin(), Connection::Step{nullptr, nullptr, sql::mark_row_writer});
  auto r = tx.begin_with_all(std::move(steps));
  if (r.ok()) r->erase(r->begin());
  return r;
}

}  // namespace

// Statements for one pipeline; the steps point into `params` (a deque: stable addresses).
struct PostgresStore::Writes {
  std::deque<Params> params;
  std::vector<Connection::Step> steps;
  void add(const Statement& st, Params p) {
    params.push_back(std::move(p));
    steps.push_back({&st, &params.back(), nullptr});
  }
};

bool PostgresStore::schedule(const std::string& allocation_id) {
  return workers_.post_in_order(allocation_id,
                                [this, allocation_id] { run_allocation(allocation_id); });
}

template <class Pending>
void PostgresStore::fail_all(Waiting<Pending>& waiting, const std::string& allocation_id,
                             const Error& error) {
  for (auto& p : waiting.drain(allocation_id)) p.done(error);
}

template <class Pending>
void PostgresStore::enqueue(Waiting<Pending>& waiting, const std::string& allocation_id,
                            Pending item) {
  // Otherwise the allocation's job is queued or running and takes it.
  if (waiting.add(allocation_id, std::move(item)) && !schedule(allocation_id)) {
    fail_all(waiting, allocation_id,
             make_error(ErrorCode::store_unavailable, "postgres: store queue full"));
  }
}

template <class Pending>
std::vector<Pending> PostgresStore::take(Waiting<Pending>& waiting,
                                         const std::string& allocation_id, size_t max) {
  bool more = false;
  std::vector<Pending> batch = waiting.take(allocation_id, max, more);
  // Queued behind this job (same key): runs once this transaction is over.
  if (more && !schedule(allocation_id)) {
    fail_all(waiting, allocation_id,
             make_error(ErrorCode::store_unavailable, "postgres: store queue full"));
  }
  return batch;
}

void PostgresStore::admit(AdmitCommand cmd, Callback<AdmitResult> done) {
  const std::string allocation_id = cmd.allocation_id;
  enqueue(admissions_, allocation_id, {std::move(cmd), std::move(done)});
}

void PostgresStore::settle(SettleCommand cmd, Callback<SettleResult> done) {
  const std::string allocation_id = cmd.allocation_id;
  enqueue(settlements_, allocation_id, {std::move(cmd), std::move(done)});
}

void PostgresStore::run_allocation(const std::string& allocation_id) {
  const Settlements settlements =
      take(settlements_, allocation_id, settlements_per_transaction_max);
  const Admissions admissions = take(admissions_, allocation_id, admissions_per_transaction_max);
  if (!settlements.empty() && !admissions.empty()) {
    auto both = with_connection<SettledAndAdmitted>(
        [&](Connection& c) { return settle_and_admit_on(c, settlements, admissions); });
    if (both.ok()) {
      if (options_.on_commit_batch)
        options_.on_commit_batch(static_cast<int64_t>(admissions.size()));
      for (size_t i = 0; i < settlements.size(); ++i) settlements[i].done(both->settled[i]);
      answer_admissions(admissions, std::move(both->admitted));
      return;
    }
    // The transaction wrote nothing (or, had its COMMIT's answer been lost, everything: each
    // settlement then plans against what it wrote, each admission finds its request id
    // taken): each kind goes alone, so one refused value fails only its own.
  }
  if (!settlements.empty()) settle_batch(settlements);
  if (!admissions.empty()) admit_batch(admissions);
}

void PostgresStore::admit_batch(const Admissions& batch) {
  auto results = with_connection<std::vector<Result<AdmitResult>>>(
      [this, &batch](Connection& c) { return admit_on(c, batch); });
  if (!results.ok()) {
    for (const auto& p : batch) p.done(results.error());  // after the failure, holding no lock
    return;
  }
  if (options_.on_commit_batch) options_.on_commit_batch(static_cast<int64_t>(batch.size()));
  answer_admissions(batch, std::move(*results));
}

void PostgresStore::answer_admissions(const Admissions& batch,
                                      std::vector<Result<AdmitResult>> results) {
  for (size_t i = 0; i < batch.size(); ++i) {  // after COMMIT, holding no lock
    if (!results[i].ok() && results[i].error().code == ErrorCode::invalid_api_key)
      forget_key(batch[i].cmd.key_id);
    batch[i].done(std::move(results[i]));
  }
}

Params PostgresStore::window_count_params(const std::string& allocation_id,
                                          size_t admissions) const {
  return Params()
      .text(allocation_id)
      .opt_i64(injected_now())
      .i64(options_.in_flight_timeout_s * micros_per_second)
      .i64(core::rate_window_us)
      .i64(static_cast<int64_t>(admissions));
}

Result<std::vector<Result<AdmitResult>>> PostgresStore::admit_on(Connection& c,
                                                                 const Admissions& batch) {
  CAIRVA_ASSERT(!batch.empty());
  Transaction tx(c);
  // BEGIN, the row lock, the window counts and the keys in one round trip. The counts
  // statement starts only once the lock statement has finished (the server runs a
  // pipeline in order), so its snapshot and its clock reading come after the lock: start
  // times follow admission order and every earlier holder's commit (a revocation's too)
  // is visible.
  Writes reads;
  const std::vector<std::string> keys = admission_reads(batch, reads);
  auto first = begin_writing(tx, std::move(reads.steps));
  if (!first.ok()) return first.error();
  Writes w;
  auto out = decide_admissions(batch, keys, *first, 0, w);
  if (!out.ok()) return out.error();
  // The writes and COMMIT in one round trip (the row lock is held one round trip less).
  if (Status s = tx.run_all_and_commit(std::move(w.steps)); !s.ok()) return s.error();
  return out;
}

std::vector<std::string> PostgresStore::admission_reads(const Admissions& batch, Writes& w) const {
  const std::string& allocation_id = batch.front().cmd.allocation_id;
  w.add(sql::lock_allocation, Params().text(allocation_id));
  w.add(sql::window_counts, window_count_params(allocation_id, batch.size()));
  std::vector<std::string> keys;
  for (const auto& p : batch) {
    if (std::find(keys.begin(), keys.end(), p.cmd.key_id) != keys.end()) continue;
    keys.push_back(p.cmd.key_id);
    w.add(sql::key_revoked, Params().text(p.cmd.key_id));
  }
  return keys;
}

Result<std::vector<Result<AdmitResult>>> PostgresStore::decide_admissions(
    const Admissions& batch, const std::vector<std::string>& keys,
    const std::vector<PgResult>& read, size_t at, Writes& w) {
  const std::string& allocation_id = batch.front().cmd.allocation_id;
  const PgResult& locked = read[at];
  const PgResult& counts = read[at + 1];
  std::vector<std::string> refused_keys;  // revoked, or gone
  for (size_t k = 0; k < keys.size(); ++k) {
    const PgResult& key = read[at + 2 + k];
    if (rows(key) == 0 || get_bool(key.get(), 0, 0)) refused_keys.push_back(keys[k]);
  }
  if (rows(locked) == 0) return make_error(ErrorCode::not_found, "allocation not found");
  auto alloc = parse_allocation(locked.get(), 0, 0);
  if (!alloc.ok()) return alloc.error();
  core::AllocationSnapshot snap = alloc->snap;
  const UnixMicros now = parse_counts(counts.get(), 0, 0, snap);
  const core::AllocationSnapshot before = snap;

  // Each admission is decided on the snapshot the ones before it left, as if each had its
  // own transaction in this order.
  std::vector<Result<AdmitResult>> out;
  out.reserve(batch.size());
  for (const auto& p : batch) {
    CAIRVA_ASSERT(p.cmd.allocation_id == allocation_id);
    if (std::find(refused_keys.begin(), refused_keys.end(), p.cmd.key_id) != refused_keys.end()) {
      out.push_back(make_error(ErrorCode::invalid_api_key, "invalid API key"));
      continue;
    }
    AdmitResult r{core::decide_admission(snap, p.cmd.facts, now), {}};
    core::apply_admission(snap, r.decision);
    r.after = snap;
    out.push_back(r);
  }
  // Each insert sets the allocation's state as the batch leaves it; the states' own write
  // is needed only for the agreement's, or when no insert carries the allocation's.
  const std::string final_state(core::to_string(snap.state));
  const bool any_admitted = snap.in_flight != before.in_flight;
  if (snap.agreement_state != before.agreement_state ||
      (!any_admitted && snap.state != before.state)) {
    w.add(sql::set_states, Params()
                               .text(allocation_id)
                               .text(final_state)
                               .text(alloc->agreement_id)
                               .text(core::to_string(snap.agreement_state)));
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!out[i].ok()) continue;
    const auto* admitted = std::get_if<core::Admitted>(&out[i]->decision.outcome);
    if (admitted == nullptr) continue;
    const AdmitCommand& cmd = batch[i].cmd;
    w.add(sql::insert_request, Params()
                                   .text(allocation_id)
                                   .text(cmd.request_id)
                                   .text(cmd.key_id)
                                   .i64(now)
                                   .text(cmd.model)
                                   .boolean(cmd.stream)
                                   .i64(admitted->hold.input)
                                   .i64(admitted->hold.output)
                                   .text(final_state));
  }
  return out;
}

void PostgresStore::settle_batch(std::span<const PendingSettlement> batch) {
  auto results = with_connection<std::vector<SettleResult>>(
      [&](Connection& c) { return settle_batch_on(c, batch); });
  if (results.ok()) {
    for (size_t i = 0; i < batch.size(); ++i) batch[i].done((*results)[i]);
  } else if (batch.size() == 1) {
    batch.front().done(results.error());
  } else {
    // A failure that may be one settlement's (a value the database refuses) must not fail
    // the others: each settles alone.
    for (size_t i = 0; i < batch.size(); ++i) settle_batch(batch.subspan(i, 1));
  }
}

void PostgresStore::settlement_reads(std::span<const PendingSettlement> batch, Writes& w) const {
  // The row lock, then each request's row (locked too, the clock read after the
  // allocation's lock) and, for a usage report, the event under its provider id. One
  // statement per row, not one `id = ANY($1)`: that one's generic plan intersects the
  // allocation's whole index of requests with the ids.
  const std::string& allocation_id = batch.front().cmd.allocation_id;
  w.add(sql::lock_allocation, Params().text(allocation_id));
  for (const auto& p : batch) {
    w.add(sql::read_request_locked,
          Params().text(p.cmd.request_id).text(allocation_id).opt_i64(injected_now()));
    if (p.cmd.kind != SettleKind::usage) continue;
    w.add(sql::booked_event_by_provider_id,
          Params().text(allocation_id).text(p.cmd.provider_request_id));
  }
}

Result<std::vector<SettleResult>> PostgresStore::settle_batch_on(
    Connection& c, std::span<const PendingSettlement> batch) {
  CAIRVA_ASSERT(!batch.empty());
  Transaction tx(c);
  Writes reads;
  settlement_reads(batch, reads);
  // BEGIN and the reads in one round trip; see admit_on.
  auto first = begin_writing(tx, std::move(reads.steps));
  if (!first.ok()) return first.error();
  Writes w;
  auto out = decide_settlements(batch, *first, w);
  if (!out.ok()) return out.error();
  // The writes and COMMIT in one round trip (the row lock is held one round trip less).
  if (Status s = tx.run_all_and_commit(std::move(w.steps)); !s.ok()) return s.error();
  return out;
}

Result<PostgresStore::SettledAndAdmitted> PostgresStore::settle_and_admit_on(
    Connection& c, const Settlements& settlements, const Admissions& admissions) {
  CAIRVA_ASSERT(!settlements.empty() && !admissions.empty());
  CAIRVA_ASSERT(settlements.front().cmd.allocation_id == admissions.front().cmd.allocation_id);
  Transaction tx(c);
  Writes reads;
  settlement_reads(settlements, reads);
  auto first = begin_writing(tx, std::move(reads.steps));
  if (!first.ok()) return first.error();
  SettledAndAdmitted out;
  Writes w;
  auto settled = decide_settlements(settlements, *first, w);
  if (!settled.ok()) return settled.error();
  out.settled = std::move(*settled);
  // The settlements' writes, then admit_on's reads (the allocation's row and window counts
  // as the settlements leave them: the same transaction sees its own writes): the
  // admissions are decided as if their transaction came right after the settlements'.
  const size_t writes = w.steps.size();
  const std::vector<std::string> keys = admission_reads(admissions, w);
  auto second = c.pipeline(w.steps);
  if (!second.ok()) return second.error();
  Writes admit;
  auto admitted = decide_admissions(admissions, keys, *second, writes, admit);
  if (!admitted.ok()) return admitted.error();
  out.admitted = std::move(*admitted);
  if (Status s = tx.run_all_and_commit(std::move(admit.steps)); !s.ok()) return s.error();
  return out;
}

Result<std::vector<SettleResult>> PostgresStore::decide_settlements(
    std::span<const PendingSettlement> batch, const std::vector<PgResult>& read, Writes& w) {
  const std::string& allocation_id = batch.front().cmd.allocation_id;
  std::vector<SettleResult> out(batch.size());  // unknown_request unless found below
  if (rows(read[0]) == 0) return out;
  auto alloc = parse_allocation(read[0].get(), 0, 0);
  if (!alloc.ok()) return alloc.error();
  // What the reads found, kept as the batch's own settlements leave it.
  LockedRequests requests;
  std::unordered_map<std::string, BookedUnderId> events;  // by provider request id
  size_t at = 1;
  for (const auto& p : batch) {
    auto rq = parse_locked_request(read[at++].get());
    if (!rq.ok()) return rq.error();
    if (rq->has_value()) requests.try_emplace(p.cmd.request_id, std::move(**rq));
    if (p.cmd.kind != SettleKind::usage || rows(read[at++]) == 0) continue;
    const PGresult* e = read[at - 1].get();
    events.try_emplace(p.cmd.provider_request_id,
                       BookedUnderId{{get_i64(e, 0, 0), get_i64(e, 0, 1)}, get_text(e, 0, 2)});
  }
  // One time for the batch, the latest row's: bookings keep the order of their seq.
  UnixMicros now = 0;
  for (const auto& [id, rq] : requests) now = std::max(now, rq.now);
  core::AllocationSnapshot& a = alloc->snap;
  int64_t seq = alloc->event_seq;

  for (size_t i = 0; i < batch.size(); ++i) {
    const SettleCommand& cmd = batch[i].cmd;
    CAIRVA_ASSERT(cmd.allocation_id == allocation_id);
    const auto rq = requests.find(cmd.request_id);
    core::SettlementFacts facts{std::nullopt,      nullptr,           std::nullopt, a.state,
                                a.agreement_state, a.terms.allowance, a.booked};
    if (rq != requests.end()) {
      facts.state = rq->second.state;
      if (rq->second.open.reported) facts.reported = &*rq->second.open.reported;
    }
    const auto ev =
        cmd.kind == SettleKind::usage ? events.find(cmd.provider_request_id) : events.end();
    if (ev != events.end())
      facts.booked = core::BookedEvent{ev->second.counts, ev->second.request_id == cmd.request_id};
    const core::SettlePlan plan =
        core::plan_settlement(facts, {cmd.kind, cmd.provider_request_id, cmd.usage});
    out[i] = {plan.outcome, plan.request_state};
    if (rq == requests.end()) continue;
    // Persist the plan's effects, and keep what this batch's later settlements read.
    const core::Tokens hold = rq->second.open.hold;
    const std::string provider_id(
        core::recorded_provider_id(plan, cmd.provider_request_id, cmd.request_id));
    if (plan.insert_event) {
      a.booked = {a.booked.input + cmd.usage.input, a.booked.output + cmd.usage.output};
      if (plan.depletes) a.state = core::AllocationState::depleted;
      if (plan.completes_agreement) a.agreement_state = core::AgreementState::completed;
      w.add(sql::book_new_event,
            booking_params(allocation_id, *alloc, a, ++seq, new_id("evt"), cmd.request_id,
                           cmd.provider_request_id, cmd.usage, core::EventSource::provider,
                           core::Finality::reported, "", now, hold));
      events.insert_or_assign(cmd.provider_request_id, BookedUnderId{cmd.usage, cmd.request_id});
    } else if (plan.change_state && plan.release_hold) {
      w.add(sql::close_request, Params()
                                    .text(allocation_id)
                                    .text(cmd.request_id)
                                    .text(core::to_string(plan.request_state))
                                    .i64(now)
                                    .text(provider_id)
                                    .i64(hold.input)
                                    .i64(hold.output));
    } else if (plan.change_state) {
      w.add(sql::mark_usage_pending, Params().text(cmd.request_id).i64(now).text(provider_id));
    }
    if (plan.keep_reported) {
      w.add(sql::keep_reported, Params()
                                    .text(cmd.request_id)
                                    .i64(cmd.usage.input)
                                    .i64(cmd.usage.output)
                                    .text(cmd.provider_request_id));
      rq->second.open.reported = core::ReportedUsage{cmd.usage, cmd.provider_request_id};
    }
    if (plan.record_conflict) {
      w.add(sql::insert_conflict,
            conflict_params(allocation_id, cmd.request_id, cmd.provider_request_id, cmd.usage,
                            plan.booked_counts, now));
    }
    rq->second.state = plan.request_state;
  }
  return out;
}

void PostgresStore::note_provider_id(ProviderIdNote note, Callback<void> done) {
  if (!done) done = [](const Status&) {};
  run_async<void>(std::move(done), [note = std::move(note)](Connection& c) -> Status {
    auto r = c.run(
        sql::note_provider_id,
        Params().text(note.request_id).text(note.allocation_id).text(note.provider_request_id));
    if (!r.ok()) return r.error();
    return {};
  });
}

void PostgresStore::allocation_status(const std::string& allocation_id,
                                      Callback<AllocationStatus> done) {
  run_async<AllocationStatus>(std::move(done), [this, allocation_id](Connection& c) {
    return one_status_on(c, allocation_id);
  });
}

void PostgresStore::owns_provider_request(const std::string& allocation_id,
                                          const std::string& provider_request_id,
                                          Callback<bool> done) {
  run_async<bool>(std::move(done),
                  [allocation_id, provider_request_id](Connection& c) -> Result<bool> {
                    auto r = c.run(sql::owns_provider_request,
                                   Params().text(allocation_id).text(provider_request_id));
                    if (!r.ok()) return r.error();
                    return rows(*r) == 1 && get_bool(r->get(), 0, 0);
                  });
}

Result<std::vector<AllocationStatus>> PostgresStore::status_on(
    Connection& c, const std::optional<std::string>& id) {
  auto r = c.run(sql::allocation_status, Params()
                                             .opt_i64(injected_now())
                                             .opt_text(id)
                                             .i64(options_.in_flight_timeout_s * micros_per_second)
                                             .i64(core::rate_window_us)
                                             .i64(allocations_list_max));
  if (!r.ok()) return r.error();
  std::vector<AllocationStatus> out;
  for (int i = 0; i < rows(*r); ++i) {
    auto alloc = parse_allocation(r->get(), i, sql::status_lock_offset);
    if (!alloc.ok()) return alloc.error();
    AllocationStatus s{get_text(r->get(), i, 0), alloc->agreement_id, alloc->snap};
    const UnixMicros now = parse_counts(r->get(), i, sql::status_counts_offset, s.snapshot);
    s.snapshot.state = core::effective_state(s.snapshot, now);
    out.push_back(std::move(s));
  }
  return out;
}

Result<AllocationStatus> PostgresStore::one_status_on(Connection& c, const std::string& id) {
  auto all = status_on(c, id);
  if (!all.ok()) return all.error();
  if (all->empty()) return make_error(ErrorCode::not_found, "allocation not found: " + id);
  return std::move(all->front());
}

void PostgresStore::usage_series(UsageQuery q, Callback<UsageSeries> done) {
  if (Status s = check_usage_query(q); !s.ok()) {
    done(s.error());
    return;
  }
  run_async<UsageSeries>(std::move(done),
                         [this, q = std::move(q)](Connection& c) { return usage_series_on(c, q); });
}

Result<int64_t> PostgresStore::sweep_stale() {
  return with_connection<int64_t>([this](Connection& c) -> Result<int64_t> {
    auto r = c.run(
        sql::sweep_stale,
        Params().opt_i64(injected_now()).i64(options_.in_flight_timeout_s * micros_per_second));
    if (!r.ok()) return r.error();
    return static_cast<int64_t>(std::stoll(PQcmdTuples(r->get())));
  });
}

}  // namespace cairva::store::pg
