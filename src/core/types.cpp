#include "core/types.h"

#include <array>

namespace cairva::core {
namespace {

// Each table is in enum order: the wire name of enumerator i is kNames[i].
constexpr std::array<std::string_view, 4> kAgreementNames{"in_force", "completed", "expired",
                                                          "cancelled"};
constexpr std::array<std::string_view, 6> kAllocationNames{"ready",    "active",  "suspended",
                                                           "depleted", "expired", "cancelled"};
constexpr std::array<std::string_view, 4> kRequestNames{"in_flight", "booked", "usage_pending",
                                                        "failed"};
constexpr std::array<std::string_view, 3> kSourceNames{"provider", "reconciliation", "adjustment"};
constexpr std::array<std::string_view, 2> kFinalityNames{"reported", "confirmed"};

static_assert(static_cast<size_t>(AgreementState::cancelled) + 1 == kAgreementNames.size());
static_assert(static_cast<size_t>(AllocationState::cancelled) + 1 == kAllocationNames.size());
static_assert(static_cast<size_t>(RequestState::failed) + 1 == kRequestNames.size());
static_assert(static_cast<size_t>(EventSource::adjustment) + 1 == kSourceNames.size());
static_assert(static_cast<size_t>(Finality::confirmed) + 1 == kFinalityNames.size());

template <class E, size_t N>
std::optional<E> parse(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(AgreementState s) { return kAgreementNames[static_cast<size_t>(s)]; }
std::string_view to_string(AllocationState s) { return kAllocationNames[static_cast<size_t>(s)]; }
std::string_view to_string(RequestState s) { return kRequestNames[static_cast<size_t>(s)]; }
std::string_view to_string(EventSource s) { return kSourceNames[static_cast<size_t>(s)]; }
std::string_view to_string(Finality s) { return kFinalityNames[static_cast<size_t>(s)]; }

std::optional<AgreementState> parse_agreement_state(std::string_view s) {
  return parse<AgreementState>(kAgreementNames, s);
}
std::optional<AllocationState> parse_allocation_state(std::string_view s) {
  return parse<AllocationState>(kAllocationNames, s);
}
std::optional<RequestState> parse_request_state(std::string_view s) {
  return parse<RequestState>(kRequestNames, s);
}
std::optional<EventSource> parse_event_source(std::string_view s) {
  return parse<EventSource>(kSourceNames, s);
}
std::optional<Finality> parse_finality(std::string_view s) {
  return parse<Finality>(kFinalityNames, s);
}

}  // namespace cairva::core
