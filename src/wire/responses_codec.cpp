#include "wire/responses_codec.h"

#include <algorithm>
#include <vector>

#include "wire/codec.h"
#include "wire/errors.h"
#include "wire/json.h"
#include "wire/splice.h"
#include "wire/usage.h"

namespace cairva::wire {

static_assert(Codec<ResponsesCodec>);

namespace {

namespace od = json::od;

using json::member_depth;

enum class EventKind : uint8_t {
  other,     // passed through unread (deltas, items, parts...)
  response,  // carries the response: its id is the provider's (created, queued, in_progress)
  terminal,  // the response's last event, with its usage
};

EventKind kind_of(std::string_view type) {
  if (type == "response.completed" || type == "response.incomplete" || type == "response.failed") {
    return EventKind::terminal;
  }
  if (type == "response.created" || type == "response.in_progress" || type == "response.queued") {
    return EventKind::response;
  }
  return EventKind::other;
}

// What an event carrying a response says, and where its response object ends.
struct EventScan {
  std::string type;  // the data's top-level "type"
  std::string id;    // response.id
  std::optional<core::Tokens> usage;
  bool has_response = false;
  size_t response_close = 0;  // offset of the response object's closing brace in the data
  bool response_has_members = false;
  std::optional<ByteSpan> usage_source_value;
};

// Reads the response object `v` (its members id, usage, usage_source). False on bad JSON.
bool scan_response(od::document& doc, const char* base, od::value v, EventScan& out) {
  const json::SpanStart start = json::span_start(v, base);
  od::object obj;
  if (v.get_object().get(obj)) return false;
  out.has_response = true;
  for (auto entry : obj) {
    od::field field;
    if (std::move(entry).get(field)) return false;
    std::string_view key;
    if (json::read_key(field, key)) return false;
    out.response_has_members = true;
    od::value value = field.value();
    simdjson::error_code e = simdjson::SUCCESS;
    std::string_view id;
    if (key == "usage") {
      out.usage = read_usage(value, member_depth + 1, e, responses_usage_fields);
    } else if (key == "id" && value.get_string().get(id) == simdjson::SUCCESS) {
      out.id.assign(id);
    } else if (key == "usage_source") {
      const json::SpanStart at = json::span_start(value, base);
      e = json::validate(value, member_depth + 1);
      size_t end = 0;
      if (!e) e = json::span_end(at, doc, base, end);
      out.usage_source_value = ByteSpan{at.offset, end - at.offset};
    } else {
      e = json::validate(value, member_depth + 1);
    }
    if (e) return false;
  }
  size_t end = 0;
  if (json::span_end(start, doc, base, end) || end == 0) return false;
  out.response_close = end - 1;
  return true;
}

// Reads an event's data: its type and, for a response object under "response", what
// scan_response reads. False when the data is not one JSON object.
bool scan_event(json::Scratch& scratch, std::string_view data, EventScan& out) {
  return json::scan_object(
      scratch, data, [&](od::document& doc, std::string_view key, od::value value) {
        od::json_type type;
        if (value.type().get(type)) return false;
        std::string_view text;
        if (key == "type" && type == od::json_type::string) {
          if (value.get_string().get(text)) return false;
          out.type.assign(text);
        } else if (key == "response" && type == od::json_type::object && !out.has_response) {
          // scratch.base() only now: iterate may have moved the buffer.
          if (!scan_response(doc, scratch.base(), value, out)) return false;
        } else if (json::validate(value, member_depth)) {
          return false;
        }
        return true;
      });
}

// Appends `piece` of an event's data to an event rebuilt as one data line: data joined
// from several lines holds '\n', which inside JSON is only ever whitespace.
void append_data(std::string& out, std::string_view piece) {
  const size_t from = out.size();
  out.append(piece);
  std::replace(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(), '\n', ' ');
}

// The terminal event as the client gets it: `usage_source` added to (or replaced in) its
// response object, every other byte of its data unchanged; `name` is its `event:` field,
// empty when the provider sent none.
std::string tagged_terminal(std::string_view name, std::string_view data, const EventScan& scan) {
  const std::string_view source = scan.usage ? "\"provider\"" : "\"pending\"";
  std::vector<Edit> edits;
  if (scan.usage_source_value) {
    edits.push_back(
        {scan.usage_source_value->offset, scan.usage_source_value->size, std::string(source)});
  } else {
    std::string member = scan.response_has_members ? ",\"usage_source\":" : "\"usage_source\":";
    member.append(source);
    edits.push_back({scan.response_close, 0, std::move(member)});
  }
  std::string out;
  if (!name.empty()) {
    out.append("event: ");
    out.append(name);
    out.append("\n");
  }
  out.append("data: ");
  append_data(out, splice(data, std::move(edits)));
  out.append("\n\n");
  return out;
}

}  // namespace

bool ResponsesStreamRelay::feed(std::string_view bytes, std::string& out) {
  if (finished_) return true;
  return relay_events(parser_, bytes, [&](const SseEvent& event) {
    relay(event, out);
    return true;
  });
}

void ResponsesStreamRelay::relay(const SseEvent& event, std::string& out) {
  if (terminal_seen_) return;  // nothing follows the terminal event
  if (!event.has_data) {
    out.append(event.raw);  // comments (keep-alives) and data-less events pass through
    return;
  }
  // Named events are told apart without parsing: most are deltas, passed through as sent.
  if (!event.name.empty() && kind_of(event.name) == EventKind::other) {
    out.append(event.raw);
    return;
  }
  json::with_scratch(event.data.size(), [&](json::Scratch& scratch) {
    EventScan scan;
    const bool read = scan_event(scratch, event.data, scan);
    const std::string_view name = event.name.empty() ? std::string_view(scan.type) : event.name;
    const EventKind kind = kind_of(name);
    if (read && kind != EventKind::other && provider_id_.empty() && !scan.id.empty())
      provider_id_ = scan.id;
    if (kind != EventKind::terminal) {
      out.append(event.raw);
      return;
    }
    terminal_seen_ = true;
    if (!read || !scan.has_response) {
      terminal_.assign(event.raw);  // not ours to judge: the client gets it as sent
      return;
    }
    usage_ = scan.usage;
    terminal_ = tagged_terminal(event.name, event.data, scan);
  });
}

void ResponsesStreamRelay::finish(std::string& out) {
  if (finished_) return;
  finished_ = true;
  out.append(terminal_);
}

void ResponsesStreamRelay::finish_cut(std::string&) { finished_ = true; }

void ResponsesCodec::append_stream_error(std::string& out, ErrorCode code,
                                         std::string_view message) {
  out.append("event: error\ndata: {\"type\":\"error\",\"code\":");
  out.append(json_quoted(wire_name(code)));
  out.append(",\"message\":");
  out.append(json_quoted(message));
  out.append(",\"param\":null}\n\n");
}

}  // namespace cairva::wire
