// A journaled write as the operation log stores it (oplog_frame.h): a kind and up to
// `texts` texts and `nums` numbers, whose meaning is the kind's. Each kind's struct names
// its fields once; pack() builds a record from one, Record::as<K>() reads one back, and
// only the oplog's (de)serialisation handles the slots themselves. writes.h runs them.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>

#include "base/assert.h"

namespace cairva::store::sqlite::writes {

// One journaled write: its texts back to back in one buffer, its numbers inline.
struct Record {
  // Stored in the oplog: never renumber, only add.
  enum class Kind : uint8_t {
    insert_request = 1,
    book = 2,
    book_as_duplicate = 3,
    fail_request = 4,
    mark_usage_pending = 5,
    insert_conflict = 6,
    set_states = 7,
    keep_reported = 8,
    note_provider_id = 9,
  };
  static constexpr size_t texts = 7;
  static constexpr size_t nums = 5;
  Kind kind = Kind::insert_request;
  std::array<int64_t, nums> num_slots{};  // the oplog's (unused slots 0)

  // The record's fields by name; REQUIRES: kind == K::kind.
  template <class K>
  K as() const;
  // The oplog's: text slot i (the kind's texts() lists its fields in slot order).
  std::string_view text_slot(size_t i) const {
    return std::string_view(bytes_).substr(start(i), end_[i] - start(i));
  }
  // Up to `texts` values; the rest are empty.
  void set_texts(std::span<const std::string_view> values);
  bool operator==(const Record&) const = default;

 private:
  size_t start(size_t i) const { return i == 0 ? 0 : end_[i - 1]; }
  // The texts back to back: one allocation per record, not one per text. Records are built
  // on the event loop and freed on the applier's thread, and a block freed across threads
  // costs the loop more when its allocator hands it out again.
  std::string bytes_;
  std::array<uint32_t, texts> end_{};
};

// Each kind's fields. texts() and nums() list them in their slots' order; the oplog stores
// slots, not names: never reorder, only append. The views point into the record read (or,
// for pack(), into what its builder was given).
struct InsertRequest {
  static constexpr Record::Kind kind = Record::Kind::insert_request;
  std::string_view id, allocation_id, key_id, state, model;
  int64_t started_at = 0, stream = 0, hold_input = 0, hold_output = 0;
  static auto texts(auto& f) { return std::tie(f.id, f.allocation_id, f.key_id, f.state, f.model); }
  static auto nums(auto& f) {
    return std::tie(f.started_at, f.stream, f.hold_input, f.hold_output);
  }
};
struct Book {  // a new usage event
  static constexpr Record::Kind kind = Record::Kind::book;
  std::string_view id, allocation_id, request_id, provider_request_id, source, finality, evidence;
  int64_t input = 0, output = 0, booked_at = 0;
  static auto texts(auto& f) {
    return std::tie(f.id, f.allocation_id, f.request_id, f.provider_request_id, f.source,
                    f.finality, f.evidence);
  }
  static auto nums(auto& f) { return std::tie(f.input, f.output, f.booked_at); }
};
// A change to a request's row. `provider_request_id`: '' keeps the one recorded for
// fail_request and mark_usage_pending; the others set it as given: book_as_duplicate's
// (booked without an event of its own) names the allocation's event it repeated, and
// note_provider_id's is the provider's id on a request still in_flight.
template <Record::Kind K>
struct RequestChange {
  static constexpr Record::Kind kind = K;
  std::string_view request_id, provider_request_id;
  int64_t finished_at = 0;
  static auto texts(auto& f) { return std::tie(f.request_id, f.provider_request_id); }
  static auto nums(auto& f) { return std::tie(f.finished_at); }
};
using BookAsDuplicate = RequestChange<Record::Kind::book_as_duplicate>;
using FailRequest = RequestChange<Record::Kind::fail_request>;
using MarkUsagePending = RequestChange<Record::Kind::mark_usage_pending>;  // finished_at unused
using NoteProviderId = RequestChange<Record::Kind::note_provider_id>;      // finished_at unused
struct KeepReported {  // the request's reported_usage: counts it reported, not booked
  static constexpr Record::Kind kind = Record::Kind::keep_reported;
  std::string_view request_id, provider_request_id;
  int64_t input = 0, output = 0;
  static auto texts(auto& f) { return std::tie(f.request_id, f.provider_request_id); }
  static auto nums(auto& f) { return std::tie(f.input, f.output); }
};
struct InsertConflict {
  static constexpr Record::Kind kind = Record::Kind::insert_conflict;
  std::string_view id, allocation_id, request_id, provider_request_id;
  int64_t reported_input = 0, reported_output = 0, booked_input = 0, booked_output = 0,
          recorded_at = 0;
  static auto texts(auto& f) {
    return std::tie(f.id, f.allocation_id, f.request_id, f.provider_request_id);
  }
  static auto nums(auto& f) {
    return std::tie(f.reported_input, f.reported_output, f.booked_input, f.booked_output,
                    f.recorded_at);
  }
};
struct SetStates {
  static constexpr Record::Kind kind = Record::Kind::set_states;
  std::string_view allocation_id, agreement_id, state, agreement_state;
  static auto texts(auto& f) {
    return std::tie(f.allocation_id, f.agreement_id, f.state, f.agreement_state);
  }
  static std::tuple<> nums(auto& /*f*/) { return {}; }
};

// The record of `k`'s fields, its texts copied into one buffer. A kind with more fields
// than slots does not compile (too many initializers).
template <class K>
Record pack(const K& k) {
  Record r;
  r.kind = K::kind;
  std::apply(
      [&](const auto&... t) {
        const std::array<std::string_view, Record::texts> texts{t...};
        r.set_texts(std::span(texts).first(sizeof...(t)));
      },
      K::texts(k));
  std::apply([&](auto... n) { r.num_slots = {n...}; }, K::nums(k));
  return r;
}

template <class K>
K Record::as() const {
  CAIRVA_ASSERT(kind == K::kind);
  K k;
  size_t i = 0;
  std::apply([&](auto&... t) { ((t = text_slot(i++)), ...); }, K::texts(k));
  i = 0;
  std::apply([&](auto&... n) { ((n = num_slots[i++]), ...); }, K::nums(k));
  return k;
}

// A record's kind read back from the oplog; false for a number this build does not know.
bool known_kind(int64_t kind);

}  // namespace cairva::store::sqlite::writes
