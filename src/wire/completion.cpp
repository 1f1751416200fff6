#include "wire/completion.h"

#include <vector>

#include "wire/chat_request.h"
#include "wire/json.h"
#include "wire/splice.h"
#include "wire/usage.h"

namespace cairva::wire {
namespace {

namespace od = json::od;

constexpr int member_depth = 2;

Error malformed(std::string_view why) {
  return make_error(ErrorCode::provider_unavailable, "provider response is not a valid JSON object: " + std::string(why));
}

// A completion body read once: what the gateway needs, and where usage_source goes.
struct CompletionScan {
  CompletionInfo info;
  size_t close = 0;  // offset of the closing '}'
  bool has_members = false;
  std::optional<ByteSpan> usage_value;
  std::optional<ByteSpan> usage_source_value;
};

Result<CompletionScan> scan_completion(std::string_view body) {
  return json::with_scratch(body.size(), [&](json::Scratch& scratch) -> Result<CompletionScan> {
    od::document doc;
    if (auto e = scratch.iterate(body).get(doc)) return malformed(json::reason(e));
    const char* base = scratch.base();  // only now: iterate may have moved the buffer
    od::object obj;
    if (auto e = doc.get_object().get(obj)) return malformed(json::reason(e));
    CompletionScan out;
    for (auto entry : obj) {
      od::field field;
      if (auto e = std::move(entry).get(field)) return malformed(json::reason(e));
      std::string_view key;
      if (auto e = json::read_key(field, key)) return malformed(json::reason(e));
      out.has_members = true;
      od::value value = field.value();
      const json::SpanStart start = json::span_start(value, base);
      simdjson::error_code e = simdjson::SUCCESS;
      std::string_view id;
      if (key == "usage") {
        out.info.usage = read_usage(value, member_depth, e);
      } else if (key == "id" && value.get_string().get(id) == simdjson::SUCCESS) {
        out.info.id.assign(id);
      } else {
        e = json::validate(value, member_depth);
      }
      if (e) return malformed(json::reason(e));
      if (key == "usage" || key == "usage_source") {
        size_t end = 0;
        if (auto err = json::span_end(start, doc, base, end)) return malformed(json::reason(err));
        (key == "usage" ? out.usage_value : out.usage_source_value) = ByteSpan{start.offset, end - start.offset};
      }
    }
    const char* next = nullptr;
    if (doc.current_location().get(next) == simdjson::SUCCESS) return malformed("bytes after the object");
    const std::string_view trimmed = json::trim_right(body);
    if (trimmed.empty() || trimmed.back() != '}') return malformed("no closing brace");
    out.close = trimmed.size() - 1;
    return out;
  });
}

}  // namespace

Result<CompletionInfo> read_completion(std::string_view body) {
  auto scanned = scan_completion(body);
  if (!scanned) return scanned.error();
  return std::move(scanned->info);
}

std::string with_usage_source(std::string_view body, bool pending) {
  auto scanned = scan_completion(body);
  if (!scanned) return std::string(body);
  const CompletionScan& s = *scanned;
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
