#include "wire/sse.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "base/assert.h"
#include "wire/json.h"
#include "wire/limits.h"
#include "wire/usage.h"

namespace cairva::wire {

// ---------------------------------------------------------------------------------------
// SseParser

size_t SseParser::find_line_end(size_t from) const {
  // Two vectorised scans (string_view::find(char) is memchr) instead of find_first_of,
  // which calls memchr once per byte. CR is rare (most providers end lines in LF), so its
  // scan stops at the LF found first.
  const std::string_view rest = std::string_view(buffer_).substr(from);
  const size_t lf_at = std::min(rest.find('\n'), rest.size());
  const size_t cr_at = rest.substr(0, lf_at).find('\r');
  if (cr_at != std::string_view::npos) return from + cr_at;
  return lf_at < rest.size() ? from + lf_at : std::string::npos;
}

void SseParser::push(std::string_view bytes) {
  if (event_start_ > 0) {
    // Drop what earlier events used; only the incomplete event (bounded) moves.
    buffer_.erase(0, event_start_);
    line_start_ -= event_start_;
    scanned_ -= std::min(scanned_, event_start_);
    event_start_ = 0;
  }
  buffer_.append(bytes);
}

Result<std::optional<SseEvent>> SseParser::next() {
  if (returned_) {
    data_.clear();
    name_.clear();
    has_data_ = false;
    returned_ = false;
  }
  for (;;) {
    const size_t eol = find_line_end(std::max(line_start_, scanned_));
    const bool cr_at_end =
        eol != std::string::npos && buffer_[eol] == '\r' && eol + 1 == buffer_.size();
    if (eol == std::string::npos || cr_at_end) {
      // A CR last in the buffer may be the first half of a CRLF: wait for the next byte.
      scanned_ = eol == std::string::npos ? buffer_.size() : eol;
      if (pending_bytes() > sse_event_bytes_max) return too_large();
      return std::optional<SseEvent>{};
    }
    const size_t terminator = buffer_[eol] == '\r' && buffer_[eol + 1] == '\n' ? 2 : 1;
    const size_t next_line = eol + terminator;
    if (next_line - event_start_ > sse_event_bytes_max) return too_large();
    const std::string_view line(buffer_.data() + line_start_, eol - line_start_);
    line_start_ = next_line;
    if (!line.empty()) {
      take_line(line);
      continue;
    }
    const size_t start = event_start_;
    event_start_ = next_line;
    if (start == eol) continue;  // a blank line with no event before it
    returned_ = true;
    SseEvent event;
    event.raw = std::string_view(buffer_.data() + start, next_line - start);
    event.data = data_;
    event.name = name_;
    event.has_data = has_data_;
    return std::optional<SseEvent>(event);
  }
}

void SseParser::take_line(std::string_view line) {
  if (line.front() == ':') return;  // a comment
  const size_t colon = line.find(':');
  const std::string_view name = line.substr(0, colon);
  if (name != "data" && name != "event")
    return;  // id, retry: passed through in `raw`, nothing to read
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (name == "event") {
    name_.assign(value);  // bounded with the event (sse_event_bytes_max)
    return;
  }
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

Error SseParser::too_large() const {
  return make_error(
      ErrorCode::provider_unavailable,
      "provider sent an SSE event over " + std::to_string(sse_event_bytes_max) + " bytes");
}

// ---------------------------------------------------------------------------------------
// StreamRelay

namespace {

namespace od = json::od;

using json::member_depth;
constexpr std::string_view usage_source_provider = ",\"usage_source\":\"provider\"";

// What one chunk says, and where its usage member sits in its data.
struct ChunkScan {
  bool usage_present = false;
  bool usage_null = false;
  bool choices_nonempty = false;
  std::optional<core::Tokens> usage;
  size_t usage_begin = 0;  // the usage key's opening quote
  size_t usage_end = 0;    // just past the usage value
  std::string_view id;     // unescaped; views into the scratch, valid while it is
  std::string_view id_json, created_json, model_json;
};

// Reads the top-level members of a chunk; false when the data is not a JSON object.
bool scan_chunk(json::Scratch& scratch, std::string_view data, ChunkScan& out) {
  od::document doc;
  if (scratch.iterate(data).get(doc)) return false;
  const char* base = scratch.base();  // only now: iterate may have moved the buffer
  od::object obj;
  if (doc.get_object().get(obj)) return false;
  for (auto entry : obj) {
    od::field field;
    if (std::move(entry).get(field)) return false;
    const char* key_quote = field.key().raw() - 1;
    std::string_view key;
    if (json::read_key(field, key)) return false;
    od::value value = field.value();
    od::json_type type;
    if (value.type().get(type)) return false;
    if (key == "usage") {
      out.usage_present = true;
      out.usage_begin = static_cast<size_t>(key_quote - base);
      const json::SpanStart start = json::span_start(value, base);
      simdjson::error_code e = simdjson::SUCCESS;
      if (type == od::json_type::null) {
        out.usage_null = true;
        if (json::validate(value, member_depth)) return false;
      } else {
        out.usage = read_usage(value, member_depth, e);
        if (e) return false;
      }
      if (json::span_end(start, doc, base, out.usage_end)) return false;
    } else if (key == "choices" && type == od::json_type::array) {
      od::array choices;
      if (value.get_array().get(choices)) return false;
      for (auto choice : choices) {
        (void)choice;
        out.choices_nonempty = true;
        break;  // On-Demand skips the rest when the next member is read
      }
    } else if (key == "id" && type == od::json_type::string) {
      out.id_json = json::trim_right(value.raw_json_token());
      if (value.get_string().get(out.id)) return false;
    } else if (key == "created" && type == od::json_type::number) {
      out.created_json = json::trim_right(value.raw_json_token());
      if (json::validate(value, member_depth)) return false;
    } else if (key == "model" && type == od::json_type::string) {
      out.model_json = json::trim_right(value.raw_json_token());
      if (json::validate(value, member_depth)) return false;
    } else if (json::validate(value, member_depth)) {
      return false;  // a chunk we cannot fully read is passed through untouched
    }
  }
  const char* next = nullptr;
  if (doc.current_location().get(next) == simdjson::SUCCESS)
    return false;  // bytes after the object
  return true;
}

// Appends `piece` of a chunk's data to an event being rebuilt as one data line. Data
// joined from several lines holds '\n', which inside JSON is only ever whitespace.
void append_data(std::string& out, std::string_view piece) {
  const size_t from = out.size();
  out.append(piece);
  if (std::memchr(piece.data(), '\n', piece.size()) == nullptr) return;
  std::replace(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(), '\n', ' ');
}

// The range of `data` to cut so that the member [begin, end) leaves a valid object: the
// member with the comma after it, else with the comma before it, else alone.
std::pair<size_t, size_t> member_cut(std::string_view data, size_t begin, size_t end) {
  size_t after = end;
  while (after < data.size() && json::is_space(data[after])) ++after;
  if (after < data.size() && data[after] == ',') return {begin, after + 1};
  size_t before = begin;
  while (before > 0 && json::is_space(data[before - 1])) --before;
  if (before > 0 && data[before - 1] == ',') return {before - 1, end};
  return {begin, end};
}

}  // namespace

bool StreamRelay::feed(std::string_view bytes, std::string& out) {
  if (finished_) return true;
  return relay_events(parser_, bytes, [&](const SseEvent& event) {
    relay(event, out);
    return true;
  });
}

void StreamRelay::relay(const SseEvent& event, std::string& out) {
  if (done_seen_) return;  // nothing follows [DONE]
  if (!event.has_data) {
    out.append(event.raw);  // comments (keep-alives) and data-less events pass through
    return;
  }
  if (event.is_done()) {
    done_seen_ = true;  // held back until finish(): the usage settles first
    return;
  }
  json::with_scratch(event.data.size(), [&](json::Scratch& scratch) {
    ChunkScan chunk;
    if (!scan_chunk(scratch, event.data, chunk)) {
      out.append(event.raw);  // not ours to judge: the client gets it as sent
      return;
    }
    if (id_json_.empty() && !chunk.id_json.empty()) {
      id_json_.assign(chunk.id_json);
      provider_id_.assign(chunk.id);
    }
    if (created_json_.empty()) created_json_.assign(chunk.created_json);
    if (model_json_.empty()) model_json_.assign(chunk.model_json);
    if (chunk.usage && !usage_) usage_ = chunk.usage;

    const std::string_view data = event.data;
    if (client_wants_usage_) {
      if (!chunk.usage) {
        out.append(event.raw);
        return;
      }
      const size_t close = json::trim_right(data).size() - 1;
      out.append("data: ");
      append_data(out, data.substr(0, close));
      out.append(usage_source_provider);
      append_data(out, data.substr(close));
      out.append("\n\n");
      return;
    }
    if (!chunk.usage_present) {
      out.append(event.raw);
      return;
    }
    // The client did not ask for usage: the usage-only chunk goes, and so does every
    // other chunk's usage member.
    if (!chunk.usage_null && !chunk.choices_nonempty) return;
    const auto [cut_begin, cut_end] = member_cut(data, chunk.usage_begin, chunk.usage_end);
    out.append("data: ");
    append_data(out, data.substr(0, cut_begin));
    append_data(out, data.substr(cut_end));
    out.append("\n\n");
  });
}

void StreamRelay::finish(std::string& out) {
  if (finished_) return;
  finish_cut(out);
  out.append("data: [DONE]\n\n");
}

void StreamRelay::finish_cut(std::string& out) {
  if (finished_) return;
  finished_ = true;
  if (client_wants_usage_ && !usage_) {
    out.append("data: {\"id\":");
    out.append(id_json_.empty() ? std::string_view("\"\"") : std::string_view(id_json_));
    out.append(",\"object\":\"chat.completion.chunk\",\"created\":");
    out.append(created_json_.empty() ? std::string_view("0") : std::string_view(created_json_));
    out.append(",\"model\":");
    out.append(model_json_.empty() ? std::string_view("\"\"") : std::string_view(model_json_));
    out.append(",\"choices\":[],\"usage\":null,\"usage_source\":\"pending\"}\n\n");
  }
}

}  // namespace cairva::wire
