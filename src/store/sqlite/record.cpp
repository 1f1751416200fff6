#include "store/sqlite/record.h"

namespace cairva::store::sqlite::writes {

void Record::set_texts(std::span<const std::string_view> values) {
  CAIRVA_ASSERT(values.size() <= texts);
  size_t size = 0;
  for (const auto v : values) size += v.size();
  bytes_.clear();
  bytes_.reserve(size);
  for (size_t i = 0; i < texts; ++i) {
    if (i < values.size()) bytes_.append(values[i]);
    end_[i] = static_cast<uint32_t>(bytes_.size());
  }
}

bool known_kind(int64_t kind) {
  return kind >= static_cast<int64_t>(Record::Kind::insert_request) &&
         kind <= static_cast<int64_t>(Record::Kind::note_provider_id);
}

}  // namespace cairva::store::sqlite::writes
