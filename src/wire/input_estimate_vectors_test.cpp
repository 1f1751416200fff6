// SPEC §4's vectors (tests/vectors/input-estimate.json, a copy of the specification's),
// run through each API's own steps: its inspector, admission's hold and lowering, and the
// rewrite of the body the provider receives. An API plugs in with one line in
// inspectors() below; the cases of an API without an inspector here are counted and named
// as skipped.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "core/admission.h"
#include "core/estimate.h"
#include "core/limits.h"
#include "wire/chat_request.h"
#include "wire/embeddings_request.h"
#include "wire/limits.h"
#include "wire/messages_request.h"
#include "wire/responses_request.h"

namespace cairva::wire {
namespace {

namespace bj = boost::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr UnixMicros kStart = 1'700'000'000'000'000;
constexpr UnixMicros kNow = kStart + 10 * micros_per_second;
// Room enough that only a case's own remaining_output can lower or refuse it.
constexpr int64_t kPlentyTokens = 1'000'000;

core::AllocationSnapshot open_allocation(int64_t remaining_output) {
  core::AllocationSnapshot s;
  s.state = core::AllocationState::active;
  s.terms.window = {kStart, kStart + 3600 * micros_per_second};
  s.terms.limits = {
      .requests_per_minute = 10, .tokens_per_minute = kPlentyTokens, .max_concurrency = 3};
  s.terms.allowance = {kPlentyTokens, remaining_output};
  return s;
}

// What an API's inspector made of a case's body: admission's facts (the estimate
// included), and the body the provider receives once a per-choice limit is held.
struct Inspected {
  core::RequestFacts facts;
  std::function<std::string(int64_t per_choice_limit)> upstream_body;
};
using Inspector = std::function<Result<Inspected>(const std::string& body)>;

Result<Inspected> chat(const std::string& body) {
  auto r = inspect_chat_request(body);
  if (!r) return r.error();
  Inspected out;
  out.facts = {core::input_estimate(r->prompt), r->max_completion_tokens, r->max_tokens, r->n,
               core::output_hold_tokens_default};
  out.upstream_body = [body, request = *r](int64_t limit) {
    const RewritePlan plan{.per_choice_limit = limit};  // the default limit_field
    return rewrite_needed(request, plan) ? rewrite_chat_request(body, request, plan) : body;
  };
  return out;
}

Result<Inspected> responses(const std::string& body) {
  auto r = inspect_responses_request(body);
  if (!r) return r.error();
  Inspected out;
  out.facts.input_estimate = core::input_estimate(r->prompt);
  out.facts.max_completion_tokens = r->max_output_tokens;
  out.facts.default_max_tokens = core::output_hold_tokens_default;
  out.facts.per_choice_min = responses_max_output_tokens_min;
  out.upstream_body = [body, request = *r](int64_t limit) {
    return responses_rewrite_needed(request, limit)
               ? rewrite_responses_request(body, request, limit)
               : body;
  };
  return out;
}

Result<Inspected> embeddings(const std::string& body) {
  auto r = inspect_embeddings_request(body);
  if (!r) return r.error();
  Inspected out;
  out.facts.input_estimate = core::input_estimate(r->prompt);
  out.facts.holds_output = false;  // no limit field: upstream_body stays empty
  return out;
}

Result<Inspected> messages(const std::string& body) {
  auto r = inspect_messages_request(body);
  if (!r) return r.error();
  Inspected out;
  out.facts.input_estimate = core::input_estimate(r->prompt);
  out.facts.max_tokens = r->max_tokens;
  out.facts.per_choice_min = messages_per_choice_min(*r);
  out.upstream_body = [body, request = *r](int64_t limit) {
    return messages_rewrite_needed(request, limit) ? rewrite_messages_request(body, request, limit)
                                                   : body;
  };
  return out;
}

// Every API whose vectors run, by the vectors' "api" name.
const std::map<std::string, Inspector>& inspectors() {
  static const std::map<std::string, Inspector> all = {
      {"chat", chat},
      {"messages", messages},
      {"responses", responses},
      {"embeddings", embeddings},
  };
  return all;
}

// The limit members of the body the provider receives, by name.
std::map<std::string, int64_t> limits_sent(const std::string& upstream) {
  std::map<std::string, int64_t> out;
  const bj::object o = bj::parse(upstream).as_object();
  for (const char* name : {"max_tokens", "max_completion_tokens", "max_output_tokens"}) {
    if (const bj::value* v = o.if_contains(name)) out[name] = v->as_int64();
  }
  return out;
}

int64_t output_hold(const core::RequestFacts& f) {
  if (!f.holds_output) return 0;
  return core::output_hold({f.max_completion_tokens, f.max_tokens, f.n}, f.default_max_tokens);
}

// One case through inspection, admission and the rewrite.
void run_case(const bj::object& c, const Inspector& inspect) {
  const std::string body(c.at("body").as_string());
  auto inspected = inspect(body);
  ASSERT_TRUE(inspected.ok()) << inspected.error().message;
  const core::RequestFacts& facts = inspected->facts;
  EXPECT_EQ(facts.input_estimate, c.at("input_estimate").as_int64());

  const int64_t remaining =
      c.contains("remaining_output") ? c.at("remaining_output").as_int64() : kPlentyTokens;
  const core::AdmissionDecision d = core::decide_admission(open_allocation(remaining), facts, kNow);
  const std::string outcome =
      c.contains("outcome") ? std::string(c.at("outcome").as_string()) : "admitted";
  if (outcome == "allocation_exhausted") {
    ASSERT_FALSE(d.admitted());
    EXPECT_EQ(std::get<core::Refused>(d.outcome).code, ErrorCode::allocation_exhausted);
    EXPECT_EQ(output_hold(facts), c.at("output_hold").as_int64());
    EXPECT_FALSE(c.contains("upstream_limit")) << "a refused request reaches no provider";
    return;
  }
  ASSERT_EQ(outcome, "admitted");
  ASSERT_TRUE(d.admitted());
  const auto& a = std::get<core::Admitted>(d.outcome);
  EXPECT_EQ(a.hold.output, c.at("output_hold").as_int64());
  EXPECT_EQ(a.hold.input, facts.input_estimate);
  const bj::value* lowered = c.if_contains("lowered_to");
  if (lowered == nullptr || lowered->is_null()) {
    EXPECT_FALSE(a.lowered_to);
  } else {
    EXPECT_EQ(a.lowered_to, lowered->as_int64());
  }

  ASSERT_TRUE(c.contains("upstream_limit"));
  const bj::value& limit = c.at("upstream_limit");
  if (limit.is_null()) {
    // An API with no limit field (embeddings): nothing is held, nothing written.
    EXPECT_FALSE(facts.holds_output);
    EXPECT_FALSE(inspected->upstream_body) << "no rewrite for an API without a limit field";
    EXPECT_TRUE(limits_sent(body).empty());
    return;
  }
  std::map<std::string, int64_t> expected;
  for (const auto& [k, v] : limit.as_object()) expected[std::string(k)] = v.as_int64();
  const std::string upstream = inspected->upstream_body(a.per_choice_limit);
  EXPECT_EQ(limits_sent(upstream), expected) << upstream;
}

TEST(InputEstimateVectors, EveryCaseOfEachInspectedApiPassesThroughInspectionAdmissionAndRewrite) {
  const auto doc = bj::parse(read_file(CAIRVA_VECTORS_DIR "/input-estimate.json"));
  std::map<std::string, int> run, skipped;
  for (const auto& value : doc.at("cases").as_array()) {
    const bj::object& c = value.as_object();
    const std::string name(c.at("name").as_string());
    const std::string api(c.at("api").as_string());
    const auto inspector = inspectors().find(api);
    if (inspector == inspectors().end()) {
      ++skipped[api];
      continue;
    }
    ++run[api];
    SCOPED_TRACE(name);
    run_case(c, inspector->second);
  }
  // The vectors hold at least this many cases of each API (SPEC-APIS §2).
  const std::map<std::string, int> cases_min = {
      {"chat", 23}, {"responses", 4}, {"embeddings", 4}, {"messages", 3}};
  for (const auto& [api, inspect] : inspectors())
    EXPECT_GE(run[api], cases_min.at(api)) << api << " has too few cases";
  std::ostringstream note;
  note << "input-estimate vectors: ran";
  for (const auto& [api, n] : run) note << " " << api << "=" << n;
  note << "; skipped (no inspector yet):";
  for (const auto& [api, n] : skipped) note << " " << api << "=" << n;
  std::cout << note.str() << "\n";
  RecordProperty("input_estimate_vector_cases", note.str());
}

}  // namespace
}  // namespace cairva::wire
