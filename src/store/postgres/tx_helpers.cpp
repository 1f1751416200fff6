#include "store/postgres/tx_helpers.h"

#include "store/postgres/statements.h"

namespace cairva::store::pg {

Result<std::optional<LockedRequest>> read_locked_request(Connection& c, const std::string& id,
                                                         const std::string& allocation_id,
                                                         std::optional<UnixMicros> now) {
  auto r = c.run(sql::read_request_locked, Params().text(id).text(allocation_id).opt_i64(now));
  if (!r.ok()) return r.error();
  return parse_locked_request(r->get());
}

Result<std::optional<LockedRequest>> parse_locked_request(const PGresult* res) {
  if (PQntuples(res) == 0) return std::optional<LockedRequest>();
  const std::string state = get_text(res, 0, 0);
  auto st = core::parse_request_state(state);
  if (!st) return make_error(ErrorCode::internal_error, "postgres: bad request state " + state);
  // Filled member by member: GCC 12's Release build flags the aggregate initialiser's
  // moved-in string as maybe-uninitialized (a false positive that -Werror turns fatal).
  LockedRequest out;
  out.state = *st;
  out.provider_request_id = get_text(res, 0, 4);
  out.now = get_i64(res, 0, 5);
  out.open.state = *st;
  out.open.hold = {get_i64(res, 0, 1), get_i64(res, 0, 2)};
  out.open.started_at = get_i64(res, 0, 3);
  if (!PQgetisnull(res, 0, 6)) {
    out.open.reported =
        core::ReportedUsage{{get_i64(res, 0, 6), get_i64(res, 0, 7)}, get_text(res, 0, 8)};
  }
  return std::optional<LockedRequest>(std::move(out));
}

namespace {

core::AllocationLedger ledger_of(const AllocationRow& alloc) {
  core::AllocationLedger ledger(alloc.snap.terms);
  ledger.restore_states(alloc.snap.agreement_state, alloc.snap.state);
  ledger.restore_booked(alloc.snap.booked);
  return ledger;
}

}  // namespace

core::AllocationLedger ledger_for(const AllocationRow& alloc, const std::string& request_id,
                                  const LockedRequest* req) {
  core::AllocationLedger ledger = ledger_of(alloc);
  if (req != nullptr) ledger.restore_open_request(request_id, req->open);
  return ledger;
}

core::AllocationLedger ledger_for(const AllocationRow& alloc, const LockedRequests& requests) {
  core::AllocationLedger ledger = ledger_of(alloc);
  for (const auto& [id, req] : requests) ledger.restore_open_request(id, req.open);
  return ledger;
}

// Restores the event already booked under (allocation, provider_request_id), if any.
Result<std::optional<core::Tokens>> booked_counts(Connection& c, const std::string& allocation_id,
                                                  const std::string& provider_request_id) {
  auto r = c.run(sql::booked_event_by_provider_id,
                 Params().text(allocation_id).text(provider_request_id));
  if (!r.ok()) return r.error();
  if (rows(*r) == 0) return std::optional<core::Tokens>();
  return std::optional<core::Tokens>(
      core::Tokens{get_i64(r->get(), 0, 0), get_i64(r->get(), 0, 1)});
}

Params booking_params(const std::string& allocation_id, const AllocationRow& alloc,
                      const core::AllocationSnapshot& states, int64_t seq,
                      const std::string& event_id, const std::string& request_id,
                      const std::string& provider_request_id, const core::Tokens& usage,
                      core::EventSource source, core::Finality finality,
                      const std::string& evidence, UnixMicros now, const core::Tokens& hold) {
  return Params()
      .text(event_id)
      .text(allocation_id)
      .i64(seq)
      .text(request_id)
      .text(provider_request_id)
      .i64(usage.input)
      .i64(usage.output)
      .text(core::to_string(source))
      .text(core::to_string(finality))
      .text(evidence)
      .i64(now)
      .i64(hold.input)
      .i64(hold.output)
      .text(alloc.agreement_id)
      .text(core::to_string(states.agreement_state))
      .text(core::to_string(states.state));
}

Result<bool> write_booking(Connection& c, Transaction* commit_with,
                           const std::string& allocation_id, const AllocationRow& alloc,
                           const core::AllocationLedger& ledger, const std::string& event_id,
                           const std::string& request_id, const std::string& provider_request_id,
                           const core::Tokens& usage, core::EventSource source,
                           core::Finality finality, const std::string& evidence, UnixMicros now,
                           const core::Tokens& hold) {
  core::AllocationSnapshot states;
  states.state = ledger.state();
  states.agreement_state = ledger.agreement_state();
  const Params params =
      booking_params(allocation_id, alloc, states, alloc.event_seq + 1, event_id, request_id,
                     provider_request_id, usage, source, finality, evidence, now, hold);
  PgResult result;
  if (commit_with != nullptr) {
    if (Status s = commit_with->run_and_commit(sql::book_event, params, &result); !s.ok())
      return s.error();
  } else {
    auto r = c.run(sql::book_event, params);
    if (!r.ok()) return r.error();
    result = std::move(r).value();
  }
  return std::string_view(PQcmdTuples(result.get())) == "1";
}

}  // namespace cairva::store::pg
