#include "wire/completion.h"

#include <vector>

#include "wire/chat_request.h"
#include "wire/completion_body.h"
#include "wire/json.h"
#include "wire/limits.h"
#include "wire/splice.h"
#include "wire/usage.h"

namespace cairva::wire {
namespace {

namespace od = json::od;

using json::member_depth;

}  // namespace

Error malformed_completion(std::string_view why) {
  return make_error(ErrorCode::provider_unavailable,
                    "provider response is not a valid JSON object: " + std::string(why));
}

bool usable_provider_id(std::string_view id) {
  return !id.empty() && id.size() <= provider_id_bytes_max &&
         id.find('\0') == std::string_view::npos;
}

Result<CompletionInfo> read_completion(std::string_view body, const UsageFields& fields) {
  return read_completion_body(body, [&](od::value& usage, CompletionInfo& out) {
    simdjson::error_code e = simdjson::SUCCESS;
    out.usage = read_usage(usage, member_depth, e, fields);
    return e;
  });
}

std::string with_usage_source(std::string_view body, bool pending) {
  auto read = read_completion(body);
  if (!read) return std::string(body);
  return with_usage_source(body, *read, pending);
}

std::string with_usage_source(std::string_view body, const CompletionInfo& read, bool pending) {
  const CompletionLayout& s = read.layout;
  std::vector<Edit> edits;
  std::string tail;  // members added before the closing brace
  if (pending) {
    if (s.usage_value) {
      edits.push_back({s.usage_value->offset, s.usage_value->size, "null"});
    } else {
      tail += "\"usage\":null";
    }
  }
  const char* source = pending ? "\"pending\"" : "\"provider\"";
  if (s.usage_source_value) {
    edits.push_back({s.usage_source_value->offset, s.usage_source_value->size, source});
  } else {
    if (!tail.empty()) tail += ',';
    tail += "\"usage_source\":";
    tail += source;
  }
  if (!tail.empty()) {
    if (s.has_members) tail.insert(0, ",");
    edits.push_back({s.close, 0, std::move(tail)});
  }
  return splice(body, std::move(edits));
}

}  // namespace cairva::wire
