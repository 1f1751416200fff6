// The SPEC's nouns as plain values: states, token pairs, limits, windows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/time.h"

namespace cairva::core {

enum class AgreementState : uint8_t { in_force, completed, expired, cancelled };
// `cancelled` is never stored: an allocation's stored state stays what its ledger last
// recorded, and shown_state() (core/admission.h) shows `cancelled` once its agreement is.
enum class AllocationState : uint8_t { ready, active, suspended, depleted, expired, cancelled };
enum class RequestState : uint8_t { in_flight, booked, usage_pending, failed };
enum class EventSource : uint8_t { provider, reconciliation, adjustment };
enum class Finality : uint8_t { reported, confirmed };

std::string_view to_string(AgreementState s);
std::string_view to_string(AllocationState s);
std::string_view to_string(RequestState s);
std::string_view to_string(EventSource s);
std::string_view to_string(Finality s);
std::optional<AgreementState> parse_agreement_state(std::string_view s);
std::optional<AllocationState> parse_allocation_state(std::string_view s);
std::optional<RequestState> parse_request_state(std::string_view s);
std::optional<EventSource> parse_event_source(std::string_view s);
std::optional<Finality> parse_finality(std::string_view s);

// A pair of token counts, one per direction.
struct Tokens {
  int64_t input = 0;
  int64_t output = 0;
  friend bool operator==(const Tokens&, const Tokens&) = default;
  int64_t total() const { return input + output; }
};

// Counts a provider reported for a request that were not booked (its id was another
// request's, or the store could not book them): kept on the request as evidence an
// operator can book (SPEC §5 "Reconciliation").
struct ReportedUsage {
  Tokens counts;
  std::string provider_request_id;
  friend bool operator==(const ReportedUsage&, const ReportedUsage&) = default;
};

struct Limits {
  int64_t requests_per_minute = 0;
  int64_t tokens_per_minute = 0;
  int64_t max_concurrency = 0;
  friend bool operator==(const Limits&, const Limits&) = default;
};

// [starts_at, ends_at): open when starts_at <= now < ends_at.
struct Window {
  UnixMicros starts_at = 0;
  UnixMicros ends_at = 0;
  friend bool operator==(const Window&, const Window&) = default;
};

// The immutable numbers of an agreement.
struct Terms {
  Window window;
  Limits limits;
  Tokens allowance;
};

}  // namespace cairva::core
