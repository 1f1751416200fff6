// Row types the Store hands across its interface: what the admin API and the status
// endpoint show, and what the gateway needs to run a request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "core/admission.h"
#include "core/types.h"

namespace cairva::store {

struct AgreementRow {
  std::string id;  // agr_…
  std::string supplier;
  std::string buyer;
  std::string provider;
  std::vector<std::string> models;  // empty: every model allowed
  core::Terms terms;
  core::AgreementState state = core::AgreementState::in_force;
  UnixMicros created_at = 0;
  // service_tier values allowed beyond "auto" and "default" (SPEC §2); empty: none.
  std::vector<std::string> service_tiers;
};

// An allocation as `GET /v1/allocations/current` shows it, as of `now`.
struct AllocationStatus {
  std::string id;  // alloc_…
  std::string agreement_id;
  core::AllocationSnapshot snapshot;  // state already the effective one at `now`
};

struct ApiKeyRow {
  std::string id;  // key_…
  std::string allocation_id;
  bool revoked = false;
  UnixMicros created_at = 0;  // listings (Store::list_keys); 0 where not read
};

// What a valid API key grants: the allocation and what a request needs to be checked
// before admission.
struct KeyGrant {
  std::string key_id;
  std::string allocation_id;
  std::string provider;             // provider name of the agreement
  std::vector<std::string> models;  // agreement's allow-list; empty = all
  core::Limits limits;              // for x-ratelimit-limit-* headers
  // From a store's cache (Store::authenticate_for_admission): the key may have been
  // revoked since; only the store's admission, which checks, may rely on it.
  bool provisional = false;
  std::vector<std::string> service_tiers;  // agreement's allow-list beyond auto/default
};

struct RequestRow {
  std::string id;  // req_…
  std::string allocation_id;
  core::RequestState state = core::RequestState::in_flight;
  UnixMicros started_at = 0;
  std::optional<UnixMicros> finished_at;
  std::string model;
  bool stream = false;
  core::Tokens hold;
  std::string provider_request_id;  // empty until known
  // Counts the provider reported that were not booked (core::SettlePlan::keep_reported).
  std::optional<core::ReportedUsage> reported_usage;
};

struct UsageEventRow {
  std::string id;  // evt_…
  std::string allocation_id;
  std::string request_id;
  std::string provider_request_id;
  core::Tokens tokens;
  core::EventSource source = core::EventSource::provider;
  core::Finality finality = core::Finality::reported;
  std::string evidence;  // reconciliation and adjustment only
  UnixMicros booked_at = 0;
  // Adjustments only (SPEC-CONSOLE §4b): the event this one corrects. An adjustment's
  // counts are signed; its request and provider request id are the corrected event's.
  std::string corrects;
};

// A provider report that repeated a booked provider request id with other counts.
struct ConflictRow {
  std::string id;  // cfl_…
  std::string allocation_id;
  std::string request_id;  // the request whose report was refused
  std::string provider_request_id;
  core::Tokens reported;  // the refused counts
  core::Tokens booked;    // the counts of the event already booked
  UnixMicros recorded_at = 0;
};

}  // namespace cairva::store
