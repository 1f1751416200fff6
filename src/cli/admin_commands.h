// The admin commands' pure parts: request bodies built from flags, and answers rendered as
// readable tables. No I/O here.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/time.h"

namespace cairva::cli {

// "30d", "12h", "90m", "45s" → seconds; nullopt for anything else (or zero).
std::optional<int64_t> parse_duration_s(std::string_view text);

struct AgreementArgs {
  std::string supplier, buyer, provider;
  std::vector<std::string> models;
  std::vector<std::string> service_tiers;  // allowed beyond auto/default
  int64_t input_tokens = 0, output_tokens = 0;
  std::string starts_at;  // RFC 3339; empty = the server's now
  std::string ends_at;    // RFC 3339; or
  std::string duration;   // "30d": ends_at = (starts_at or now) + duration
  int64_t requests_per_minute = 0, tokens_per_minute = 0, max_concurrency = 0;
};

// The POST /admin/v1/agreements body. Exactly one of ends_at and duration must be set.
// Range checks are the API's: the CLI forwards what it was given.
Result<std::string> agreement_body(const AgreementArgs& args, UnixMicros now);

// Readable renderings of admin answers (the --json flag prints the body instead).
std::string render_created_agreement(const boost::json::value& v);
std::string render_agreement(const boost::json::value& agreement);
// {"agreement":{…}} as answered by cancel.
std::string render_cancelled_agreement(const boost::json::value& v);
std::string render_allocation(const boost::json::value& allocation);
std::string render_allocation_list(const boost::json::value& list);
std::string render_agreement_list(const boost::json::value& list);
std::string render_key_list(const boost::json::value& list);
std::string render_new_key(const boost::json::value& v);
std::string render_revoked_key(const boost::json::value& v);
std::string render_request_list(const boost::json::value& list);
std::string render_event(const boost::json::value& v);
std::string render_event_list(const boost::json::value& list);
std::string render_conflict_list(const boost::json::value& list);
// {"backup":{…}} as answered by POST /admin/v1/backup.
std::string render_backup(const boost::json::value& v);

// "cairva: 409 not_pending: request req_… is not usage_pending" from an error answer (or
// the raw body when it is not the usual error shape).
std::string render_error(int status, const std::string& body);

}  // namespace cairva::cli
