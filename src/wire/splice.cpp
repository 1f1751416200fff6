#include "wire/splice.h"

#include <algorithm>

#include "base/assert.h"

namespace cairva::wire {

std::string splice(std::string_view src, std::vector<Edit> edits) {
  std::stable_sort(edits.begin(), edits.end(),
                   [](const Edit& a, const Edit& b) { return a.offset < b.offset; });
  size_t out_bytes = src.size();
  for (const Edit& e : edits) out_bytes += e.insert.size();
  std::string out;
  out.reserve(out_bytes);
  size_t at = 0;
  for (const Edit& e : edits) {
    CAIRVA_ASSERT(e.offset >= at && e.offset + e.remove <= src.size());
    out.append(src.substr(at, e.offset - at));
    out.append(e.insert);
    at = e.offset + e.remove;
  }
  out.append(src.substr(at));
  return out;
}

}  // namespace cairva::wire
