// SqliteStore: opening, the request path (authenticate, admit, settle, status) and sweep.
#include "store/sqlite/sqlite_store.h"

#include <future>
#include <optional>

#include "base/ids.h"
#include "store/sqlite/limits.h"
#include "store/sqlite/oplog.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/writes.h"

namespace cairva::store::sqlite {
namespace {

Error unavailable(const std::string& why) { return make_error(ErrorCode::store_unavailable, why); }

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path,
                                                       const StoreOptions& options,
                                                       std::shared_ptr<const Clock> clock) {
  auto lock = FileLock::acquire(path);
  if (!lock.ok()) return lock.error();
  // Before the database is opened to write (or migrated): a refused upgrade changes nothing.
  if (Status s = oplog::retire_v1_log(path, /*may_delete=*/true); !s.ok()) return s.error();
  auto wdb = Db::open(path, false);
  if (!wdb.ok()) return wdb.error();
  // The tables commit with FULL whatever store.sync says: the oplog deletes a segment only
  // once its application is on disk (oplog.h).
  if (Status s = prepare_database(*wdb, /*sync_full=*/true); !s.ok()) {
    return make_error(ErrorCode::store_unavailable, "store " + path + ": " + s.error().message);
  }
  // The applier's multi-row inserts (apply_rows_per_insert) run inside large transactions,
  // so SQLite keeps a statement journal for each (the pages it changes, to undo that
  // statement alone): past 64 KiB SQLite writes it to a new temporary file, which cost the
  // applier a file created, unlinked and written a page at a time, about twice its WAL
  // writes. In memory, it is a copy of the few pages one statement changes. Set after the
  // migrations, which may sort whole tables and must keep spilling to disk.
  if (Status s = wdb->exec("PRAGMA temp_store=MEMORY"); !s.ok()) return s.error();
  // Writes the previous process acknowledged but had not yet applied to the tables.
  auto replayed = oplog::replay(*wdb, path);
  if (!replayed.ok()) return make_error(ErrorCode::store_unavailable, replayed.error().message);
  auto log = oplog::Log::start(path, replayed->next_seq, options.sync_full);
  if (!log.ok()) return log.error();
  auto rdb = Db::open(path, true);
  if (!rdb.ok()) return rdb.error();
  // Requests the previous process left in flight may or may not have reached the provider:
  // they hold their allowance until an operator reconciles them (SPEC §9).
  if (Status s = wdb->exec("UPDATE requests SET state = 'usage_pending' WHERE state = 'in_flight'");
      !s.ok()) {
    return s.error();
  }
  auto writer = std::make_unique<Writer>(std::move(wdb).value(), std::move(*log),
                                         replayed->next_seq, clock, options.on_commit_batch);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, options, std::move(clock),
                                                     std::move(lock).value(),
                                                     std::move(rdb).value(), std::move(writer)));
  if (Status s = store->load(); !s.ok()) return s.error();
  return store;
}

SqliteStore::SqliteStore(std::string path, StoreOptions options, std::shared_ptr<const Clock> clock,
                         std::unique_ptr<FileLock> lock, Db reader, std::unique_ptr<Writer> writer)
    : path_(std::move(path)),
      options_(std::move(options)),
      clock_(std::move(clock)),
      lock_(std::move(lock)),
      reader_(std::move(reader)),
      writer_(std::move(writer)),
      read_worker_(std::make_unique<ReadWorker>()) {}

SqliteStore::~SqliteStore() {
  read_worker_.reset();  // its reads use the writer
  writer_.reset();       // drains the queue before the file lock is released
}

std::shared_ptr<SqliteStore::Allocation> SqliteStore::find(const std::string& allocation_id) const {
  std::shared_lock lock(map_mu_);
  const auto it = allocations_.find(allocation_id);
  return it == allocations_.end() ? nullptr : it->second;
}

std::shared_ptr<SqliteStore::Allocation> SqliteStore::find_by_agreement(
    const std::string& agreement_id) const {
  std::shared_lock lock(map_mu_);
  const auto it = allocation_of_agreement_.find(agreement_id);
  if (it == allocation_of_agreement_.end()) return nullptr;
  const auto a = allocations_.find(it->second);
  return a == allocations_.end() ? nullptr : a->second;
}

void SqliteStore::persist_states_if_changed(Allocation& a, core::AllocationState before,
                                            core::AgreementState before_agreement) {
  if (a.ledger.state() == before && a.ledger.agreement_state() == before_agreement) return;
  writer_->enqueue(
      {WriteOp::Kind::durable,
       {writes::set_states(a.id, a.agreement.id, a.ledger.state(), a.ledger.agreement_state())},
       {},
       {}},
      Writer::Wake::soon);
}

int64_t SqliteStore::sweep_locked(Allocation& a, UnixMicros now) {
  std::vector<std::string> swept = a.ledger.sweep_stale(now, options_.in_flight_timeout_s);
  const auto n = static_cast<int64_t>(swept.size());
  if (n > 0) {
    WriteOp op{WriteOp::Kind::durable, {}, {}, {}};
    for (const auto& id : swept)
      op.records.push_back(writes::pack(writes::MarkUsagePending{id, ""}));
    writer_->enqueue(std::move(op), Writer::Wake::soon);
  }
  return n;
}

AllocationStatus SqliteStore::status_locked(Allocation& a, UnixMicros now) {
  AllocationStatus s{a.id, a.agreement.id, a.ledger.snapshot(now)};
  s.snapshot.state = core::effective_state(s.snapshot, now);
  return s;
}

AgreementRow SqliteStore::agreement_locked(Allocation& a) const {
  AgreementRow row = a.agreement;
  row.state = a.ledger.agreement_state();
  return row;
}

// ---------------------------------------------------------------- request path

void SqliteStore::authenticate(const std::string& key_secret_hash, Callback<KeyGrant> done) {
  std::shared_ptr<Key> key;
  std::shared_ptr<Allocation> alloc;
  {
    std::shared_lock lock(map_mu_);
    const auto it = keys_by_hash_.find(key_secret_hash);
    // The map's lookup compared the hash already; the constant-time compare keeps timing
    // independent of where a near-miss differs should the map ever compare by prefix.
    if (it != keys_by_hash_.end() && !it->second->revoked &&
        constant_time_equal(it->second->hash, key_secret_hash)) {
      key = it->second;
      const auto a = allocations_.find(key->allocation_id);
      if (a != allocations_.end()) alloc = a->second;
    }
  }
  if (!key || !alloc) {
    done(make_error(ErrorCode::invalid_api_key, "invalid API key"));
    return;
  }
  KeyGrant grant{key->id, alloc->id, alloc->agreement.provider, alloc->agreement.models,
                 alloc->agreement.terms.limits};
  grant.service_tiers = alloc->agreement.service_tiers;
  done(std::move(grant));
}

void SqliteStore::admit(AdmitCommand cmd, Callback<AdmitResult> done) {
  const auto alloc = find(cmd.allocation_id);
  if (!alloc) {
    done(make_error(ErrorCode::not_found, "allocation not found: " + cmd.allocation_id));
    return;
  }
  if (writer_->failing()) {
    done(unavailable("store unavailable: writes are failing"));
    return;
  }
  std::optional<Result<AdmitResult>> answer_now;
  std::function<void(Status)> refused;  // an admitted start the writer would not queue
  {
    std::lock_guard lock(alloc->mu);
    // Never before the allocation's last start (Allocation::last_start).
    const UnixMicros now = std::max(clock_->now(), alloc->last_start);
    sweep_locked(*alloc, now);
    const auto before = alloc->ledger.state();
    const auto before_agreement = alloc->ledger.agreement_state();
    AdmitResult out{alloc->ledger.admit(cmd.request_id, cmd.facts, now), {}};
    if (out.decision.admitted()) alloc->last_start = now;
    out.after = alloc->ledger.snapshot(now);
    persist_states_if_changed(*alloc, before, before_agreement);
    if (!out.decision.admitted()) {
      answer_now = out;
    } else {
      const core::Tokens hold = std::get<core::Admitted>(out.decision.outcome).hold;
      RequestRow row{std::move(cmd.request_id),
                     std::move(cmd.allocation_id),
                     core::RequestState::in_flight,
                     now,
                     std::nullopt,
                     std::move(cmd.model),
                     cmd.stream,
                     hold,
                     ""};
      writes::Record start = writes::insert_request(row, cmd.key_id);  // copies the texts
      // The callback runs once the start is durable; a failed write undoes the admission
      // (hold released, in-flight decremented, the start uncounted: the PostgreSQL store's
      // failed commit leaves nothing either) so nothing is forwarded without its start.
      auto on_written = [this, alloc, id = std::move(row.id), out,
                         done = std::move(done)](const Status& s) mutable {
        if (s.ok()) {
          done(out);
          return;
        }
        {
          std::lock_guard relock(alloc->mu);
          alloc->ledger.withdraw(id);
        }
        done(unavailable(s.error().message));
      };
      WriteOp op{WriteOp::Kind::admission, {std::move(start)}, {}, std::move(on_written)};
      // try_enqueue leaves `op` as it was when it refuses (writer.h): its callback is still ours.
      // NOLINTNEXTLINE(bugprone-use-after-move)
      if (!writer_->try_enqueue(std::move(op), Writer::Wake::soon)) refused = std::move(op.done);
    }
  }
  // Outside the lock: the refused write's callback takes it to undo the admission.
  if (refused) refused(unavailable("store unavailable: write queue full or failing"));
  // answer_now is set only on the path that kept `done` (a refusal moves nothing).
  if (answer_now) done(*answer_now);  // NOLINT(bugprone-use-after-move)
}

void SqliteStore::settle(SettleCommand cmd, Callback<SettleResult> done) {
  const auto alloc = find(cmd.allocation_id);
  if (!alloc) {
    done(SettleResult{});  // unknown_request
    return;
  }
  // Answered at once, the ledger untouched: the gateway keeps the report and settles again.
  if (writer_->journal_failing()) {
    done(unavailable("store unavailable: writes are failing"));
    return;
  }
  std::unique_lock lock(alloc->mu);
  if (alloc->ledger.find_open(cmd.request_id) == nullptr) {
    lock.unlock();
    settle_lookup(std::move(cmd), std::move(done));
    return;
  }
  const UnixMicros now = booking_time_locked(*alloc);
  const auto before = alloc->ledger.state();
  const auto before_agreement = alloc->ledger.agreement_state();
  const core::SettlePlan plan =
      alloc->ledger.settle(cmd.request_id, {cmd.kind, cmd.provider_request_id, cmd.usage}, now);
  persist(cmd, plan, now, std::move(done));
  persist_states_if_changed(*alloc, before, before_agreement);
}

// A request the ledger no longer tracks: settled already, or never this allocation's. Its
// row says which; only a conflict (its own event reported with other counts) is written.
void SqliteStore::settle_lookup(SettleCommand cmd, Callback<SettleResult> done) {
  auto found = std::make_shared<std::optional<std::pair<core::RequestState, std::string>>>();
  auto apply = [found, id = cmd.request_id, alloc = cmd.allocation_id](Db& db) -> Status {
    auto s = db.prepare(
        "SELECT state, provider_request_id FROM requests WHERE id = ? AND allocation_id = ?");
    if (!s.ok()) return s.error();
    s->text(id).text(alloc);
    auto row = s->step();
    if (!row.ok()) return row.error();
    const auto state = *row ? core::parse_request_state(s->col_text(0)) : std::nullopt;
    if (state) *found = std::pair{*state, s->col_text(1)};
    return {};
  };
  auto on_read = [this, found, cmd = std::move(cmd),
                  done = std::move(done)](const Status& s) mutable {
    if (!s.ok()) {
      done(s.error());
      return;
    }
    core::SettlementFacts facts;
    if (found->has_value()) {
      facts.state = (*found)->first;
      // A booked request's provider id is its own event's.
      if (facts.state == core::RequestState::booked &&
          (*found)->second == cmd.provider_request_id) {
        const auto alloc = find(cmd.allocation_id);
        std::lock_guard lock(alloc->mu);
        if (auto counts = alloc->ledger.booked_counts(cmd.provider_request_id))
          facts.booked = {{*counts, true}};
      }
    }
    const auto plan = core::plan_settlement(facts, {cmd.kind, cmd.provider_request_id, cmd.usage});
    CAIRVA_ASSERT(!plan.change_state && !plan.keep_reported);
    persist(cmd, plan, clock_->now(), std::move(done));
  };
  writer_->enqueue({WriteOp::Kind::read, {}, std::move(apply), std::move(on_read)},
                   Writer::Wake::soon);
}

void SqliteStore::persist(const SettleCommand& cmd, const core::SettlePlan& plan, UnixMicros now,
                          Callback<SettleResult> done) {
  const SettleResult out{plan.outcome, plan.request_state};
  const std::string& id = cmd.request_id;
  const std::string_view provider_id =
      core::recorded_provider_id(plan, cmd.provider_request_id, id);
  WriteOp::Records rows;
  if (plan.insert_event) {
    const std::string event_id = new_time_ordered_id("evt");
    rows.push_back(writes::book_reported({.id = event_id,
                                          .allocation_id = cmd.allocation_id,
                                          .request_id = id,
                                          .provider_request_id = provider_id,
                                          .input = cmd.usage.input,
                                          .output = cmd.usage.output,
                                          .booked_at = now}));
  } else if (plan.change_state && plan.request_state == core::RequestState::failed) {
    rows.push_back(writes::pack(writes::FailRequest{id, provider_id, now}));
  } else if (plan.change_state) {
    rows.push_back(writes::pack(writes::MarkUsagePending{id, provider_id}));
  }
  if (plan.keep_reported) {
    rows.push_back(writes::pack(
        writes::KeepReported{id, cmd.provider_request_id, cmd.usage.input, cmd.usage.output}));
  }
  if (plan.record_conflict) {
    rows.push_back(writes::insert_conflict(ConflictRow{new_id("cfl"), cmd.allocation_id, id,
                                                       cmd.provider_request_id, cmd.usage,
                                                       plan.booked_counts, now}));
  }
  if (rows.empty()) {
    done(out);
    return;
  }
  auto on_written = [out, done = std::move(done)](const Status& s) {
    if (s.ok()) {
      done(out);
    } else {
      done(s.error());
    }
  };
  // One op per settlement keeps its records in one oplog and one table transaction.
  writer_->enqueue({WriteOp::Kind::settlement, std::move(rows), {}, std::move(on_written)},
                   Writer::Wake::soon);
}

void SqliteStore::note_provider_id(ProviderIdNote note, Callback<void> done) {
  const auto alloc = find(note.allocation_id);
  bool queued = false;
  std::optional<WriteOp> refused;
  if (alloc) {
    // Under the lock, as a settlement: the ledger and the oplog see the note in its order.
    std::lock_guard lock(alloc->mu);
    if (alloc->ledger.note_provider_id(note.request_id, note.provider_request_id)) {
      WriteOp op{WriteOp::Kind::admission,
                 {writes::pack(writes::NoteProviderId{note.request_id, note.provider_request_id})},
                 {},
                 std::move(done)};
      queued = writer_->try_enqueue(std::move(op), Writer::Wake::soon);
      // A refused op is left as it was (writer.h).
      if (!queued) refused = std::move(op);  // NOLINT(bugprone-use-after-move)
    }
  }
  if (refused) {
    if (refused->done) refused->done(unavailable("store unavailable: write queue full or failing"));
  } else if (!queued &&
             done) {  // NOLINT(bugprone-use-after-move): moved only when queued or refused
    done(Status{});   // not in flight (any more): nothing to note
  }
}

void SqliteStore::allocation_status(const std::string& allocation_id,
                                    Callback<AllocationStatus> done) {
  auto r = get_allocation(allocation_id);
  done(std::move(r));
}

void SqliteStore::owns_provider_request(const std::string& allocation_id,
                                        const std::string& provider_request_id,
                                        Callback<bool> done) {
  bool owned = false;
  if (const auto alloc = find(allocation_id)) {
    std::lock_guard lock(alloc->mu);
    owned = alloc->ledger.owns_provider_request(provider_request_id);
  }
  done(owned);  // never under the allocation's lock
}

Result<int64_t> SqliteStore::sweep_stale() {
  std::vector<std::shared_ptr<Allocation>> all;
  {
    std::shared_lock lock(map_mu_);
    all.reserve(allocations_.size());
    for (const auto& [id, a] : allocations_) all.push_back(a);
  }
  int64_t n = 0;
  for (const auto& a : all) {
    std::lock_guard lock(a->mu);
    n += sweep_locked(*a, clock_->now());
  }
  if (n > 0) writer_->flush();
  return n;
}

Status SqliteStore::write_and_wait(std::function<Status(Db&)> apply, bool fail_fast) {
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  auto done = [p](const Status& s) { p->set_value(s); };
  if (!fail_fast) {
    writer_->enqueue({WriteOp::Kind::durable, {}, std::move(apply), std::move(done)});
  } else if (!writer_->try_enqueue(
                 {WriteOp::Kind::admission, {}, std::move(apply), std::move(done)})) {
    return unavailable("store unavailable: writes are failing");
  }
  if (f.wait_for(std::chrono::milliseconds(admin_wait_ms_max)) != std::future_status::ready) {
    return unavailable("store unavailable: write not durable in time");
  }
  return f.get();
}

}  // namespace cairva::store::sqlite
