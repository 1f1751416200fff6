// Byte splicing: a document rewritten as a list of small edits over its original bytes,
// so nothing outside the edits is re-serialised.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cairva::wire {

// Replace `remove` bytes at `offset` (0 for a pure insertion) with `insert`.
struct Edit {
  size_t offset = 0;
  size_t remove = 0;
  std::string insert;
};

// `src` with `edits` applied. Edits must not overlap; several insertions at one offset
// are applied in the order given. REQUIRES: every edit lies within `src`.
std::string splice(std::string_view src, std::vector<Edit> edits);

}  // namespace cairva::wire
