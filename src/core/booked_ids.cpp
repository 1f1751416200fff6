#include "core/booked_ids.h"

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

BookedIds::Claim BookedIds::claim(std::string_view provider_request_id, const Tokens& counts) {
  const Digest96 key = digest96(provider_request_id);
  const PackedCounts packed = pack(counts);
  // One lookup both tests the id and claims it.
  const auto [slot, claimed] = slots_.try_emplace(key, packed);
  if (!claimed) return {false, unpack(key, slot->second)};
  if (packed.input == overflow_mark) {
    const bool added = overflow_.emplace(key, counts).second;
    CAIRVA_ASSERT(added);  // the id was free, so it had no overflow entry either
  }
  return {true, counts};
}

void BookedIds::assign(std::string_view provider_request_id, const Tokens& counts) {
  const Digest96 key = digest96(provider_request_id);
  const PackedCounts packed = pack(counts);
  slots_.insert_or_assign(key, packed);
  if (packed.input == overflow_mark) {
    overflow_.insert_or_assign(key, counts);
  } else {
    overflow_.erase(key);  // earlier counts that did not fit must not outlive their mark
  }
}

}  // namespace cairva::core
