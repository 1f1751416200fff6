#include "core/booked_ids.h"

#include <algorithm>

#include "base/assert.h"

namespace cairva::core {

BookedIds::PackedCounts BookedIds::pack(const Tokens& counts) {
  if (!fits(counts.input) || !fits(counts.output)) return {overflow_mark, overflow_mark};
  return {static_cast<uint32_t>(counts.input), static_cast<uint32_t>(counts.output)};
}

Tokens BookedIds::unpack(const Digest96& key, const PackedCounts& packed) const {
  if (packed.input != overflow_mark) {
    CAIRVA_ASSERT(packed.output != overflow_mark);  // pack marks both counts or neither
    return {packed.input, packed.output};
  }
  CAIRVA_ASSERT(packed.output == overflow_mark);
  const auto it = overflow_.find(key);
  CAIRVA_ASSERT(it != overflow_.end());  // a marked slot always has its overflow entry
  return it->second;
}

namespace {

// The shard directory's bits: the digest word Digest96Hash leaves out, so that the ids of
// one shard still spread over its map.
uint32_t shard_bits(const Digest96& key) { return key.words[2]; }

}  // namespace

size_t BookedIds::shard_of(const Digest96& key) const {
  return directory_[depth_ == 0 ? 0 : shard_bits(key) >> (32 - depth_)];
}

void BookedIds::split_if_full(size_t shard) {
  while (shards_[shard].slots.size() >= shard_ids_max && shards_[shard].depth < 32) {
    const unsigned depth = shards_[shard].depth;
    if (depth == depth_) {  // the directory doubles: each entry becomes two
      std::vector<uint32_t> twice(directory_.size() * 2);
      for (size_t i = 0; i < directory_.size(); ++i)
        twice[2 * i] = twice[2 * i + 1] = directory_[i];
      directory_ = std::move(twice);
      ++depth_;
    }
    // The ids whose next bit is 1 move to a new shard, with the directory entries for them.
    const uint32_t bit = uint32_t{1} << (31 - depth);
    const size_t moved_to = shards_.size();
    shards_.push_back({Slots{}, depth + 1});
    Shard& from = shards_[shard];
    from.depth = depth + 1;
    Slots& to = shards_[moved_to].slots;
    to.reserve(shard_ids_max);
    boost::unordered::erase_if(from.slots, [&](const Slots::value_type& slot) {
      if ((shard_bits(slot.first) & bit) == 0) return false;
      to.emplace(slot);
      return true;
    });
    const size_t span = size_t{1} << (depth_ - depth);  // entries sharing the shard's prefix
    for (size_t first = 0; first < directory_.size(); first += span) {
      if (directory_[first] != shard) continue;
      for (size_t i = first + span / 2; i < first + span; ++i)
        directory_[i] = static_cast<uint32_t>(moved_to);
    }
    // Should every id have gone one way (odds 2^-shard_ids_max), that side splits again.
    if (shards_[moved_to].slots.size() > shards_[shard].slots.size()) shard = moved_to;
  }
}

size_t BookedIds::largest_shard() const {
  size_t most = 0;
  for (const auto& s : shards_) most = std::max(most, s.slots.size());
  return most;
}

BookedIds::Claim BookedIds::claim(std::string_view provider_request_id, const Tokens& counts) {
  const Digest96 key = digest96(provider_request_id);
  const PackedCounts packed = pack(counts);
  // One lookup both tests the id and claims it.
  const size_t shard = shard_of(key);
  const auto [slot, claimed] = shards_[shard].slots.try_emplace(key, packed);
  if (!claimed) return {false, unpack(key, slot->second)};
  ++size_;
  if (packed.input == overflow_mark) {
    const bool added = overflow_.emplace(key, counts).second;
    CAIRVA_ASSERT(added);  // the id was free, so it had no overflow entry either
  }
  split_if_full(shard);
  return {true, counts};
}

std::optional<Tokens> BookedIds::find(std::string_view provider_request_id) const {
  const Digest96 key = digest96(provider_request_id);
  const auto& slots = shards_[shard_of(key)].slots;
  const auto slot = slots.find(key);
  if (slot == slots.end()) return std::nullopt;
  return unpack(key, slot->second);
}

void BookedIds::assign(std::string_view provider_request_id, const Tokens& counts) {
  const Digest96 key = digest96(provider_request_id);
  const PackedCounts packed = pack(counts);
  const size_t shard = shard_of(key);
  if (shards_[shard].slots.insert_or_assign(key, packed).second) {
    ++size_;
    split_if_full(shard);
  }
  if (packed.input == overflow_mark) {
    overflow_.insert_or_assign(key, counts);
  } else {
    overflow_.erase(key);  // earlier counts that did not fit must not outlive their mark
  }
}

}  // namespace cairva::core
