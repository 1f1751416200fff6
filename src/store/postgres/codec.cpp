#include "store/postgres/codec.h"

#include "base/ids.h"
#include "store/postgres/statements.h"

namespace cairva::store::pg {
namespace {

Error bad_value(std::string_view what, std::string_view value) {
  return make_error(ErrorCode::internal_error,
                    "postgres: unexpected " + std::string(what) + " '" + std::string(value) + "'");
}

}  // namespace

Result<AllocationRow> parse_allocation(const PGresult* r, int row, int offset) {
  using namespace sql;
  AllocationRow out;
  auto& s = out.snap;
  const std::string state = get_text(r, row, offset + lock_state);
  const std::string ag_state = get_text(r, row, offset + lock_agreement_state);
  auto st = core::parse_allocation_state(state);
  if (!st) return bad_value("allocation state", state);
  auto ags = core::parse_agreement_state(ag_state);
  if (!ags) return bad_value("agreement state", ag_state);
  s.state = *st;
  s.agreement_state = *ags;
  s.booked = {get_i64(r, row, offset + lock_booked_input),
              get_i64(r, row, offset + lock_booked_output)};
  s.held = {get_i64(r, row, offset + lock_held_input), get_i64(r, row, offset + lock_held_output)};
  s.terms.window = {get_i64(r, row, offset + lock_starts_at),
                    get_i64(r, row, offset + lock_ends_at)};
  s.terms.limits = {get_i64(r, row, offset + lock_rpm), get_i64(r, row, offset + lock_tpm),
                    get_i64(r, row, offset + lock_max_concurrency)};
  s.terms.allowance = {get_i64(r, row, offset + lock_allowance_input),
                       get_i64(r, row, offset + lock_allowance_output)};
  out.event_seq = get_i64(r, row, offset + lock_event_seq);
  out.agreement_id = get_text(r, row, offset + lock_agreement_id);
  return out;
}

UnixMicros parse_counts(const PGresult* r, int row, int offset, core::AllocationSnapshot& snap) {
  snap.requests_last_minute = get_i64(r, row, offset + 1);
  snap.tokens_last_minute = get_i64(r, row, offset + 2);
  snap.in_flight = get_i64(r, row, offset + 3);
  snap.usage_pending = get_i64(r, row, offset + 4);
  snap.oldest_start_at = get_i64(r, row, offset + 5);
  snap.freeing_booking_at = get_i64(r, row, offset + 6);
  snap.as_of = get_i64(r, row, offset);
  return snap.as_of;
}

Result<RequestRow> parse_request(const PGresult* r, int row) {
  using namespace sql;
  RequestRow out;
  out.id = get_text(r, row, req_id);
  out.allocation_id = get_text(r, row, req_allocation_id);
  const std::string state = get_text(r, row, req_state);
  auto st = core::parse_request_state(state);
  if (!st) return bad_value("request state", state);
  out.state = *st;
  out.started_at = get_i64(r, row, req_started_at);
  out.finished_at = get_opt_i64(r, row, req_finished_at);
  out.model = get_text(r, row, req_model);
  out.stream = get_bool(r, row, req_stream);
  out.hold = {get_i64(r, row, req_hold_input), get_i64(r, row, req_hold_output)};
  out.provider_request_id = get_text(r, row, req_provider_request_id);
  if (!PQgetisnull(r, row, req_reported_input)) {
    out.reported_usage = core::ReportedUsage{
        {get_i64(r, row, req_reported_input), get_i64(r, row, req_reported_output)},
        get_text(r, row, req_reported_provider_request_id)};
  }
  return out;
}

Result<UsageEventRow> parse_event(const PGresult* r, int row) {
  using namespace sql;
  UsageEventRow out;
  out.id = get_text(r, row, evt_id);
  out.allocation_id = get_text(r, row, evt_allocation_id);
  out.request_id = get_text(r, row, evt_request_id);
  out.provider_request_id = get_text(r, row, evt_provider_request_id);
  out.tokens = {get_i64(r, row, evt_input), get_i64(r, row, evt_output)};
  const std::string source = get_text(r, row, evt_source);
  const std::string finality = get_text(r, row, evt_finality);
  auto src = core::parse_event_source(source);
  if (!src) return bad_value("event source", source);
  auto fin = core::parse_finality(finality);
  if (!fin) return bad_value("event finality", finality);
  out.source = *src;
  out.finality = *fin;
  out.evidence = get_text(r, row, evt_evidence);
  out.booked_at = get_i64(r, row, evt_booked_at);
  out.corrects = get_text(r, row, evt_corrects);
  return out;
}

Result<AgreementRow> parse_agreement(const PGresult* r, int row) {
  AgreementRow a;
  a.id = get_text(r, row, 0);
  a.supplier = get_text(r, row, 1);
  a.buyer = get_text(r, row, 2);
  a.provider = get_text(r, row, 3);
  a.models = split_models(get_text(r, row, 4));
  a.terms.allowance = {get_i64(r, row, 5), get_i64(r, row, 6)};
  a.terms.window = {get_i64(r, row, 7), get_i64(r, row, 8)};
  a.terms.limits = {get_i64(r, row, 9), get_i64(r, row, 10), get_i64(r, row, 11)};
  const std::string state = get_text(r, row, 12);
  auto st = core::parse_agreement_state(state);
  if (!st) return bad_value("agreement state", state);
  a.state = *st;
  a.created_at = get_i64(r, row, 13);
  a.service_tiers = split_models(get_text(r, row, 14));
  return a;
}

std::string join_models(const std::vector<std::string>& models) {
  std::string out;
  for (const auto& m : models) {
    if (!out.empty()) out += '\n';
    out += m;
  }
  return out;
}

std::vector<std::string> split_models(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

Params conflict_params(std::string_view allocation_id, std::string_view request_id,
                       std::string_view provider_request_id, const core::Tokens& reported,
                       const core::Tokens& booked, int64_t at) {
  Params p;
  p.text(new_id("cfl"))
      .text(allocation_id)
      .text(request_id)
      .text(provider_request_id)
      .i64(reported.input)
      .i64(reported.output)
      .i64(booked.input)
      .i64(booked.output)
      .i64(at);
  return p;
}

}  // namespace cairva::store::pg
