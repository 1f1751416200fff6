// BookedIds: the provider request ids one allocation has booked, each with the counts it
// was booked with, kept for the allocation's life (SPEC §5: a provider request id is
// booked at most once). It is the ledger's largest structure, so it keeps each id as a
// 96-bit digest (base/digest.h for the odds of two ids sharing one) and its counts as two
// uint32 beside it: 20 bytes a slot in an open-addressing map, no node per entry. Counts
// that do not fit stay exact in a small side map.
//
// The slots are split over shards of fewer than shard_ids_max ids, found by the digest's last
// word (extendible hashing: a directory indexed by its top bits): one map of every id
// would move all of them each time it grew, stopping the event loop for a time that grows
// with the allocation's bookings. A full shard splits in two instead, moving half of its ids.
//
// Thread safety: none (the ledger's owner holds the allocation's lock).
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/digest.h"
#include "core/types.h"

namespace cairva::core {

class BookedIds {
  // Counts as they sit in a slot. Plain uint32 fields: with the key's three words the
  // slot is 4-byte aligned, unpadded and free of unaligned 64-bit access.
  struct PackedCounts {
    uint32_t input = 0;
    uint32_t output = 0;
  };
  using Slots = boost::unordered_flat_map<Digest96, PackedCounts, Digest96Hash>;

 public:
  // A shard that reaches this many ids splits in two (the most ids one booking can move).
  // Split shards are sized for it up front, so they never grow their table; it is under
  // the 13,440 ids Boost's flat map holds in 1,024 groups of 15 slots at its 0.875 maximum
  // load, so that table is 40-80 % full.
  static constexpr size_t shard_ids_max = 12288;

  // A slot: 12-byte key + 8-byte counts (the map adds one metadata byte per slot).
  static constexpr size_t slot_bytes = sizeof(Slots::value_type);
  static_assert(slot_bytes == 20, "a booked id costs 20 bytes a slot");

  // Both counts of a slot equal to this: its counts are in the overflow map. A count is
  // kept in the slot only when 0 <= count < this, so the mark is never a real count there.
  static constexpr uint32_t overflow_mark = std::numeric_limits<uint32_t>::max();

  struct Claim {
    bool claimed = false;  // the id was free and is now booked with the given counts
    Tokens booked;         // the id's counts: the given ones if claimed, else the earlier ones
  };

  // Books `counts` under the id unless it is already booked; one hash lookup either way
  // (the booking hot path). Counts of any value come back exactly.
  Claim claim(std::string_view provider_request_id, const Tokens& counts);
  // The id's counts, if it is booked.
  std::optional<Tokens> find(std::string_view provider_request_id) const;
  // Rebuilding from a store: books the id with `counts`, replacing earlier counts.
  void assign(std::string_view provider_request_id, const Tokens& counts);

  size_t size() const { return size_; }
  // Ids whose counts did not fit in a slot.
  size_t overflow_size() const { return overflow_.size(); }
  // Tests: the shards and the largest one's ids.
  size_t shards() const { return shards_.size(); }
  size_t largest_shard() const;

 private:
  static bool fits(int64_t count) { return count >= 0 && count < int64_t{overflow_mark}; }
  static PackedCounts pack(const Tokens& counts);
  Tokens unpack(const Digest96& key, const PackedCounts& packed) const;

  struct Shard {
    Slots slots;
    unsigned depth = 0;  // its ids share this many top bits of the digest's last word
  };
  size_t shard_of(const Digest96& key) const;
  // After an insert into `shard`: splits it while it holds shard_ids_max ids or more.
  void split_if_full(size_t shard);

  std::vector<Shard> shards_{1};
  // 2^depth_ entries: the shard of the ids whose last word starts with each bit pattern.
  std::vector<uint32_t> directory_{0};
  unsigned depth_ = 0;
  size_t size_ = 0;
  // Counts of the slots marked overflow_mark. Each such booking is of at least 2^32 - 1
  // tokens, so an allocation has about allowance / 2^32 of them (plus requests open when
  // it depleted): the map stays small beside the shards.
  std::unordered_map<Digest96, Tokens, Digest96Hash> overflow_;
};

}  // namespace cairva::core
