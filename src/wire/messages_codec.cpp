#include "wire/messages_codec.h"

#include <algorithm>
#include <cstring>

#include "wire/codec.h"
#include "wire/completion_body.h"
#include "wire/errors.h"
#include "wire/json.h"
#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace od = json::od;
using simdjson::error_code;

using json::member_depth;

// One count of a usage object into `slot`: an integer in [0, usage_tokens_max] replaces
// it, null leaves it (not reported here), anything else marks the counts invalid. Consumes
// `v`; the error is a JSON syntax error met on the way.
error_code read_count(od::value v, int depth, std::optional<int64_t>& slot, bool& invalid) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::null) return json::validate(v, depth);
  if (type == od::json_type::number) {
    od::number_type nt;
    int64_t x = 0;
    if (v.get_number_type().get(nt) == simdjson::SUCCESS && nt == od::number_type::signed_integer &&
        v.get_int64().get(x) == simdjson::SUCCESS) {
      if (x >= 0 && x <= usage_tokens_max) {
        slot = x;
      } else {
        invalid = true;
      }
      return simdjson::SUCCESS;
    }
    // A number, but not a count. A failed get_* leaves the value unconsumed.
    double ignored = 0;
    if (v.get_double().get(ignored) == simdjson::SUCCESS) {
      invalid = true;
      return simdjson::SUCCESS;
    }
  }
  invalid = true;
  return json::validate(v, depth);
}

// A usage object into `counts`, each count it carries replacing the earlier value. Null
// changes nothing; any other non-object marks the counts invalid.
error_code read_usage_counts(od::value v, int depth, MessageUsageCounts& counts) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type != od::json_type::object) {
    if (type != od::json_type::null) counts.invalid = true;
    return json::validate(v, depth);
  }
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  unsigned seen = 0;
  for (auto entry : obj) {
    od::field field;
    if (auto e = std::move(entry).get(field)) return e;
    std::string_view key;
    if (auto e = json::read_key(field, key)) return e;
    std::optional<int64_t>* slot = nullptr;
    unsigned bit = 0;
    if (key == "input_tokens") {
      slot = &counts.input, bit = 1;
    } else if (key == "cache_creation_input_tokens") {
      slot = &counts.cache_creation, bit = 2;
    } else if (key == "cache_read_input_tokens") {
      slot = &counts.cache_read, bit = 4;
    } else if (key == "output_tokens") {
      slot = &counts.output, bit = 8;
    }
    if (slot == nullptr) {
      if (auto e = json::validate(field.value(), depth + 1)) return e;
      continue;
    }
    if (seen & bit) counts.invalid = true;  // repeated: which one counts is ambiguous
    seen |= bit;
    if (auto e = read_count(field.value(), depth + 1, *slot, counts.invalid)) return e;
  }
  return simdjson::SUCCESS;
}

// What one stream event's data says.
struct EventScan {
  std::string type;  // its "type"
  std::string id;    // message_start's message.id
  bool has_members = false;
};

// message_start's `message`: its id and usage.
error_code read_started_message(od::value v, EventScan& out, MessageUsageCounts& counts) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type != od::json_type::object) return json::validate(v, member_depth);
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  for (auto entry : obj) {
    od::field field;
    if (auto e = std::move(entry).get(field)) return e;
    std::string_view key;
    if (auto e = json::read_key(field, key)) return e;
    od::value value = field.value();
    std::string_view id;
    if (key == "usage") {
      if (auto e = read_usage_counts(value, member_depth + 1, counts)) return e;
    } else if (key == "id" && value.get_string().get(id) == simdjson::SUCCESS) {
      out.id.assign(id);
    } else if (auto e = json::validate(value, member_depth + 1)) {
      return e;
    }
  }
  return simdjson::SUCCESS;
}

// Reads an event's data whole into `out` and `counts`; false when it is not a JSON
// object (the event then passes through untouched, its counts unread).
bool scan_event(json::Scratch& scratch, std::string_view data, EventScan& out,
                MessageUsageCounts& counts) {
  return json::scan_object(
      scratch, data, [&](od::document&, std::string_view key, od::value value) {
        out.has_members = true;
        std::string_view text;
        error_code e = simdjson::SUCCESS;
        if (key == "type" && value.get_string().get(text) == simdjson::SUCCESS) {
          out.type.assign(text);
        } else if (key == "message") {
          e = read_started_message(value, out, counts);
        } else if (key == "usage") {
          e = read_usage_counts(value, member_depth, counts);
        } else {
          e = json::validate(value, member_depth);
        }
        return !e;
      });
}

// Appends `piece` of an event's data to an event being rebuilt as one data line. Data
// joined from several lines holds '\n', which inside JSON is only ever whitespace.
void append_data(std::string& out, std::string_view piece) {
  const size_t from = out.size();
  out.append(piece);
  if (std::memchr(piece.data(), '\n', piece.size()) == nullptr) return;
  std::replace(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(), '\n', ' ');
}

bool is_message_event(std::string_view name) {
  return name == "message_start" || name == "message_delta" || name == "message_stop";
}

}  // namespace

static_assert(Codec<MessagesCodec>);

std::optional<core::Tokens> MessageUsageCounts::tokens() const {
  if (invalid || !input || !output) return std::nullopt;
  return core::Tokens{*input + cache_creation.value_or(0) + cache_read.value_or(0), *output};
}

Result<CompletionInfo> read_message(std::string_view body) {
  MessageUsageCounts counts;
  bool usage_seen = false;
  auto read = read_completion_body(body, [&](od::value& usage, CompletionInfo&) {
    if (usage_seen) counts.invalid = true;  // repeated: which one counts is ambiguous
    usage_seen = true;
    return read_usage_counts(usage, member_depth, counts);
  });
  if (read && usage_seen) read->usage = counts.tokens();
  return read;
}

bool MessagesStreamRelay::feed(std::string_view bytes, std::string& out) {
  if (finished_) return true;
  return relay_events(parser_, bytes, [&](const SseEvent& event) { return relay(event, out); });
}

bool MessagesStreamRelay::pass(std::string_view bytes, std::string& out) {
  if (!holding_) {
    out.append(bytes);
    return true;
  }
  held_.append(bytes);
  return held_.size() <= sse_event_bytes_max;
}

bool MessagesStreamRelay::relay(const SseEvent& event, std::string& out) {
  if (stop_seen_) return true;  // nothing follows message_stop
  // Content blocks, pings and the provider's own errors pass as they are, unread.
  if (!event.has_data || (!event.name.empty() && !is_message_event(event.name)))
    return pass(event.raw, out);
  return json::with_scratch(event.data.size(), [&](json::Scratch& scratch) -> bool {
    EventScan scan;
    MessageUsageCounts counts = counts_;  // kept only when the whole event reads
    if (!scan_event(scratch, event.data, scan, counts)) return pass(event.raw, out);
    const std::string_view kind = event.name.empty() ? std::string_view(scan.type) : event.name;
    if (!is_message_event(kind)) return pass(event.raw, out);
    counts_ = counts;
    if (kind == "message_stop") {
      stop_seen_ = true;
      stop_.assign(event.raw);
      usage_ = counts_.tokens();
      return true;
    }
    if (kind == "message_start") {
      if (provider_id_.empty()) provider_id_ = std::move(scan.id);
      return pass(event.raw, out);
    }
    if (holding_) return pass(event.raw, out);  // a later delta joins the held tail as it is
    const std::string_view data = event.data;
    const size_t close = json::trim_right(data).size() - 1;  // the object's '}'
    held_.assign("event: message_delta\ndata: ");
    append_data(held_, data.substr(0, close));
    held_split_ = held_.size();
    held_has_members_ = scan.has_members;
    append_data(held_, data.substr(close));
    held_.append("\n\n");
    holding_ = true;
    return held_.size() <= sse_event_bytes_max;
  });
}

void MessagesStreamRelay::release_held(std::string& out) {
  if (!holding_) return;
  holding_ = false;
  out.append(held_, 0, held_split_);
  if (held_has_members_) out.push_back(',');
  out.append(usage_ ? R"("usage_source":"provider")" : R"("usage_source":"pending")");
  out.append(held_, held_split_);
}

void MessagesStreamRelay::finish(std::string& out) {
  if (finished_) return;
  finished_ = true;
  release_held(out);
  out.append(stop_);
}

void MessagesStreamRelay::finish_cut(std::string& out) {
  if (finished_) return;
  finished_ = true;
  release_held(out);
}

void MessagesCodec::append_stream_error(std::string& out, ErrorCode code,
                                        std::string_view message) {
  out.append("event: error\ndata: ");
  out.append(anthropic_error_body(http_status(code), code, message));
  out.append("\n\n");
}

}  // namespace cairva::wire
