#include "wire/completion.h"

#include <vector>

#include "wire/chat_request.h"
#include "wire/json.h"
#include "wire/limits.h"
#include "wire/splice.h"
#include "wire/usage.h"

namespace cairva::wire {
namespace {

namespace od = json::od;

constexpr int member_depth = 2;

Error malformed(std::string_view why) {
  return make_error(ErrorCode::provider_unavailable,
                    "provider response is not a valid JSON object: " + std::string(why));
}

}  // namespace

bool usable_provider_id(std::string_view id) {
  return !id.empty() && id.size() <= provider_id_bytes_max &&
         id.find('\0') == std::string_view::npos;
}

Result<CompletionInfo> read_completion(std::string_view body, const UsageFields& fields) {
  return json::with_scratch(body.size(), [&](json::Scratch& scratch) -> Result<CompletionInfo> {
    od::document doc;
    if (auto e = scratch.iterate(body).get(doc)) return malformed(json::reason(e));
    const char* base = scratch.base();  // only now: iterate may have moved the buffer
    od::object obj;
    if (auto e = doc.get_object().get(obj)) return malformed(json::reason(e));
    CompletionInfo out;
    CompletionLayout& layout = out.layout;
    for (auto entry : obj) {
      od::field field;
      if (auto e = std::move(entry).get(field)) return malformed(json::reason(e));
      std::string_view key;
      if (auto e = json::read_key(field, key)) return malformed(json::reason(e));
      layout.has_members = true;
      od::value value = field.value();
      const json::SpanStart start = json::span_start(value, base);
      simdjson::error_code e = simdjson::SUCCESS;
      std::string_view id;
      if (key == "usage") {
        out.usage = read_usage(value, member_depth, e, fields);
      } else if (key == "id" && value.get_string().get(id) == simdjson::SUCCESS) {
        out.id.assign(id);
      } else {
        e = json::validate(value, member_depth);
      }
      if (e) return malformed(json::reason(e));
      if (key == "usage" || key == "usage_source") {
        size_t end = 0;
        if (auto err = json::span_end(start, doc, base, end)) return malformed(json::reason(err));
        (key == "usage" ? layout.usage_value : layout.usage_source_value) =
            ByteSpan{start.offset, end - start.offset};
      }
    }
    const char* next = nullptr;
    if (doc.current_location().get(next) == simdjson::SUCCESS)
      return malformed("bytes after the object");
    const std::string_view trimmed = json::trim_right(body);
    if (trimmed.empty() || trimmed.back() != '}') return malformed("no closing brace");
    layout.close = trimmed.size() - 1;
    return out;
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
