// The read of a provider's JSON completion body that read_completion (chat, Responses,
// Embeddings) and read_message (Anthropic Messages) share: only how "usage" is read
// differs. Internal to cairva_wire (it exposes simdjson), like json.h.
#pragma once

#include <string_view>
#include <utility>

#include "base/result.h"
#include "wire/completion.h"
#include "wire/json.h"

namespace cairva::wire {

// ErrorCode::provider_unavailable: the provider's body is not a valid JSON object.
Error malformed_completion(std::string_view why);

// Reads `body`, one JSON object, once: its "id" string, the spans of "usage" and
// "usage_source" and where the object closes; every other member is validated.
// read_usage(value, out) reads the "usage" member's value (at json::member_depth), each
// time it appears, consuming it, and returns the syntax error met on the way.
template <class ReadUsage>
Result<CompletionInfo> read_completion_body(std::string_view body, ReadUsage&& read_usage) {
  namespace od = json::od;
  return json::with_scratch(body.size(), [&](json::Scratch& scratch) -> Result<CompletionInfo> {
    auto malformed = [](simdjson::error_code e) { return malformed_completion(json::reason(e)); };
    od::document doc;
    if (auto e = scratch.iterate(body).get(doc)) return malformed(e);
    const char* base = scratch.base();  // only now: iterate may have moved the buffer
    od::object obj;
    if (auto e = doc.get_object().get(obj)) return malformed(e);
    CompletionInfo out;
    CompletionLayout& layout = out.layout;
    for (auto entry : obj) {
      od::field field;
      if (auto e = std::move(entry).get(field)) return malformed(e);
      std::string_view key;
      if (auto e = json::read_key(field, key)) return malformed(e);
      layout.has_members = true;
      od::value value = field.value();
      const json::SpanStart start = json::span_start(value, base);
      simdjson::error_code e = simdjson::SUCCESS;
      std::string_view id;
      if (key == "usage") {
        e = read_usage(value, out);
      } else if (key == "id" && value.get_string().get(id) == simdjson::SUCCESS) {
        out.id.assign(id);
      } else {
        e = json::validate(value, json::member_depth);
      }
      if (e) return malformed(e);
      if (key == "usage" || key == "usage_source") {
        size_t end = 0;
        if (auto err = json::span_end(start, doc, base, end)) return malformed(err);
        (key == "usage" ? layout.usage_value : layout.usage_source_value) =
            ByteSpan{start.offset, end - start.offset};
      }
    }
    const char* next = nullptr;
    if (doc.current_location().get(next) == simdjson::SUCCESS)
      return malformed_completion("bytes after the object");
    const std::string_view trimmed = json::trim_right(body);
    if (trimmed.empty() || trimmed.back() != '}') return malformed_completion("no closing brace");
    layout.close = trimmed.size() - 1;
    return out;
  });
}

}  // namespace cairva::wire
