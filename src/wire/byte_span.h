// A run of bytes in a document the wire layer read: where a splice edits it.
#pragma once

#include <cstddef>

namespace cairva::wire {

struct ByteSpan {
  size_t offset = 0;
  size_t size = 0;
  friend bool operator==(const ByteSpan&, const ByteSpan&) = default;
};

}  // namespace cairva::wire
