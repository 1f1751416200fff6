#include "store/sqlite/writes.h"

namespace cairva::store::sqlite::writes {
namespace {

std::string str(auto v) { return std::string(core::to_string(v)); }

}  // namespace

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
    s->i64(t.limits.requests_per_minute).i64(t.limits.tokens_per_minute).i64(t.limits.max_concurrency);
    s->i64(t.allowance.input).i64(t.allowance.output).text(str(a.state)).i64(a.created_at);
    if (Status r = s->run(); !r.ok()) return r;
    for (size_t i = 0; i < a.models.size(); ++i) {
      auto m = db.cached("INSERT INTO agreement_models (agreement_id, position, model) VALUES (?,?,?)");
      if (!m.ok()) return m.error();
      m->text(a.id).i64(static_cast<int64_t>(i)).text(a.models[i]);
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
    auto s = db.cached("INSERT INTO api_keys (id, allocation_id, secret_hash, created_at) VALUES (?,?,?,?)");
    if (!s.ok()) return s.error();
    s->text(key_id).text(allocation_id).text(key_hash).i64(now);
    return s->run();
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

Apply insert_request(const RequestRow& r, const std::string& key_id) {
  return [r, key_id](Db& db) -> Status {
    auto s = db.cached(
        "INSERT INTO requests (id, allocation_id, key_id, state, started_at, model, stream,"
        " hold_input, hold_output) VALUES (?,?,?,?,?,?,?,?,?)");
    if (!s.ok()) return s.error();
    s->text(r.id).text(r.allocation_id).text(key_id).text(str(r.state)).i64(r.started_at);
    s->text(r.model).i64(r.stream ? 1 : 0).i64(r.hold.input).i64(r.hold.output);
    return s->run();
  };
}

Apply set_states(const std::string& allocation_id, const std::string& agreement_id,
                 core::AllocationState state, core::AgreementState agreement_state) {
  return [=](Db& db) -> Status {
    auto a = db.cached("UPDATE allocations SET state = ? WHERE id = ?");
    if (!a.ok()) return a.error();
    a->text(str(state)).text(allocation_id);
    if (Status r = a->run(); !r.ok()) return r;
    auto g = db.cached("UPDATE agreements SET state = ? WHERE id = ?");
    if (!g.ok()) return g.error();
    g->text(str(agreement_state)).text(agreement_id);
    return g->run();
  };
}

Apply mark_usage_pending(std::vector<std::string> request_ids, const std::string& provider_request_id) {
  return [ids = std::move(request_ids), provider_request_id](Db& db) -> Status {
    for (const auto& id : ids) {
      auto s = db.cached(
          "UPDATE requests SET state = 'usage_pending',"
          " provider_request_id = CASE WHEN ? = '' THEN provider_request_id ELSE ? END"
          " WHERE id = ? AND state = 'in_flight'");
      if (!s.ok()) return s.error();
      s->text(provider_request_id).text(provider_request_id).text(id);
      if (Status r = s->run(); !r.ok()) return r;
    }
    return {};
  };
}

Apply book(const UsageEventRow& e) {
  return [e](Db& db) -> Status {
    auto ev = db.cached(
        "INSERT INTO usage_events (id, allocation_id, request_id, provider_request_id,"
        " input_tokens, output_tokens, source, finality, evidence, booked_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?)");
    if (!ev.ok()) return ev.error();
    ev->text(e.id).text(e.allocation_id).text(e.request_id).text(e.provider_request_id);
    ev->i64(e.tokens.input).i64(e.tokens.output).text(str(e.source)).text(str(e.finality));
    ev->text(e.evidence).i64(e.booked_at);
    if (Status r = ev->run(); !r.ok()) return r;
    auto rq = db.cached(
        "UPDATE requests SET state = 'booked', finished_at = ?, provider_request_id = ? WHERE id = ?");
    if (!rq.ok()) return rq.error();
    rq->i64(e.booked_at).text(e.provider_request_id).text(e.request_id);
    if (Status r = rq->run(); !r.ok()) return r;
    auto al = db.cached(
        "UPDATE allocations SET used_input = used_input + ?, used_output = used_output + ? WHERE id = ?");
    if (!al.ok()) return al.error();
    al->i64(e.tokens.input).i64(e.tokens.output).text(e.allocation_id);
    return al->run();
  };
}

Apply book_as_duplicate(const std::string& request_id, const std::string& provider_request_id,
                        UnixMicros now) {
  return [=](Db& db) -> Status {
    auto s = db.cached("UPDATE requests SET state = 'booked', finished_at = ?, provider_request_id = ? WHERE id = ?");
    if (!s.ok()) return s.error();
    s->i64(now).text(provider_request_id).text(request_id);
    return s->run();
  };
}

Apply fail_request(const std::string& request_id, const std::string& provider_request_id,
                   UnixMicros now) {
  return [=](Db& db) -> Status {
    auto s = db.cached(
        "UPDATE requests SET state = 'failed', finished_at = ?,"
        " provider_request_id = CASE WHEN ? = '' THEN provider_request_id ELSE ? END WHERE id = ?");
    if (!s.ok()) return s.error();
    s->i64(now).text(provider_request_id).text(provider_request_id).text(request_id);
    return s->run();
  };
}

Apply insert_conflict(const ConflictRow& c) {
  return [c](Db& db) -> Status {
    auto s = db.cached(
        "INSERT INTO conflicts (id, allocation_id, request_id, provider_request_id, reported_input,"
        " reported_output, booked_input, booked_output, recorded_at) VALUES (?,?,?,?,?,?,?,?,?)");
    if (!s.ok()) return s.error();
    s->text(c.id).text(c.allocation_id).text(c.request_id).text(c.provider_request_id);
    s->i64(c.reported.input).i64(c.reported.output).i64(c.booked.input).i64(c.booked.output);
    s->i64(c.recorded_at);
    return s->run();
  };
}

}  // namespace cairva::store::sqlite::writes
