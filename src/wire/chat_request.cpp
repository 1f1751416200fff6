#include "wire/chat_request.h"

#include <string>

#include "base/assert.h"
#include "wire/json.h"
#include "wire/limits.h"
#include "wire/splice.h"

namespace cairva::wire {
namespace {

namespace od = json::od;
static_assert(in_place_slack_bytes == simdjson::SIMDJSON_PADDING);
using simdjson::error_code;

Error invalid(std::string message) { return make_error(ErrorCode::invalid_request, std::move(message)); }

Error malformed(error_code e) {
  if (e == simdjson::DEPTH_ERROR) return invalid("request body is nested too deeply");
  return invalid("request body is not valid JSON: " + std::string(json::reason(e)));
}

// Members read by name; a second occurrence is refused because providers keep the last
// one and admission must hold for exactly what the provider will read.
enum Member : unsigned {
  member_model = 1u << 0,
  member_messages = 1u << 1,
  member_tools = 1u << 2,
  member_n = 1u << 3,
  member_stream = 1u << 4,
  member_stream_options = 1u << 5,
  member_max_tokens = 1u << 6,
  member_max_completion_tokens = 1u << 7,
};

Member member_of(std::string_view key) {
  if (key == "model") return member_model;
  if (key == "messages") return member_messages;
  if (key == "tools") return member_tools;
  if (key == "n") return member_n;
  if (key == "stream") return member_stream;
  if (key == "stream_options") return member_stream_options;
  if (key == "max_tokens") return member_max_tokens;
  if (key == "max_completion_tokens") return member_max_completion_tokens;
  return Member{0};
}

// Depths of the values read, for the nesting bound (the top-level object is depth 1).
constexpr int member_depth = 2;  // messages[i] is depth 3
constexpr int message_member_depth = 4;
constexpr int part_depth = 5;
constexpr int part_member_depth = 6;

// Runs fn(key, value) on each member of `obj` in order, up to the first failure. Each
// field is used where the iterator yields it, not copied out.
template <class Fn>
Status each_member(od::object& obj, Fn&& fn) {
  for (auto entry : obj) {
    if (auto e = entry.error()) return malformed(e);
    od::field& field = entry.value_unsafe();
    std::string_view key;
    if (auto e = json::read_key(field, key)) return malformed(e);
    if (auto s = fn(key, field.value()); !s) return s;
  }
  return {};
}

// Runs fn(value) on each element of `arr` in order, up to the first failure.
template <class Fn>
Status each_element(od::array& arr, Fn&& fn) {
  for (auto element : arr) {
    if (auto e = element.error()) return malformed(e);
    if (auto s = fn(element.value_unsafe()); !s) return s;
  }
  return {};
}

// Reads one request: walks the whole document once, reading the members it knows and
// validating the rest.
class Inspector {
 public:
  Inspector(od::document& doc, const char* base) : doc_(doc), base_(base) {}

  Status run(ChatRequest& out);

 private:
  Status member(Member m, od::value v, ChatRequest& out);
  Status messages(od::value v, ChatRequest& out);
  Status message(od::value v, int64_t& chars);
  Status content_parts(od::array parts, int64_t& chars);
  Status tool_calls(od::array calls, int64_t& chars);
  Status tools(od::value v, ChatRequest& out);
  Status stream_options(od::value v, ChatRequest& out);
  Status limit(od::value v, std::string_view name, int64_t max, std::optional<int64_t>& out);

  size_t offset_of(std::string_view token) const { return static_cast<size_t>(token.data() - base_); }
  // The span of a scalar value about to be read.
  ByteSpan scalar_span(od::value& v) const {
    const std::string_view token = json::trim_right(v.raw_json_token());
    return ByteSpan{offset_of(token), token.size()};
  }

  od::document& doc_;
  const char* base_;
};

// Adds the code points of `v` to `chars` when it is a string; otherwise only validates.
Status count_if_string(od::value v, int depth, int64_t& chars) {
  const error_code e = json::count_string(v, chars);
  if (e == simdjson::INCORRECT_TYPE) {  // not a string, and not read yet
    if (auto e2 = json::validate(v, depth)) return malformed(e2);
    return {};
  }
  if (e) return malformed(e);
  return {};
}

Status Inspector::run(ChatRequest& out) {
  od::json_type type;
  if (auto e = doc_.type().get(type)) return malformed(e);
  if (type != od::json_type::object) return invalid("request body must be a JSON object");
  od::object obj;
  if (auto e = doc_.get_object().get(obj)) return malformed(e);
  unsigned seen = 0;
  auto read = each_member(obj, [&](std::string_view key, od::value& v) -> Status {
    const Member m = member_of(key);
    if (m != 0) {
      if (seen & m) return invalid("member \"" + std::string(key) + "\" appears more than once");
      seen |= m;
    }
    return member(m, v, out);
  });
  if (!read) return read;
  // Whatever follows the object (a second document, garbage) makes the body malformed.
  const char* next = nullptr;
  if (doc_.current_location().get(next) == simdjson::SUCCESS) {
    return invalid("request body is not valid JSON: unexpected bytes after the object");
  }
  if (!(seen & member_model)) return invalid("model is required");
  if (!(seen & member_messages)) return invalid("messages is required");
  return {};
}

Status Inspector::member(Member m, od::value v, ChatRequest& out) {
  switch (m) {
    case member_model: {
      std::string_view model;
      if (v.get_string().get(model)) return invalid("model must be a string");
      // Kept on the request's row: PostgreSQL's text cannot hold a NUL byte.
      if (model.find('\0') != std::string_view::npos) return invalid("model must not contain a NUL character");
      out.model.assign(model);
      return {};
    }
    case member_messages:
      return messages(v, out);
    case member_tools:
      return tools(v, out);
    case member_n: {
      std::optional<int64_t> n;
      if (auto s = limit(v, "n", choices_max, n); !s) return s;
      out.n = n.value_or(1);
      return {};
    }
    case member_stream: {
      bool is_null = false;
      if (v.is_null().get(is_null) == simdjson::SUCCESS && is_null) return {};
      if (v.get_bool().get(out.stream)) return invalid("stream must be a boolean");
      return {};
    }
    case member_stream_options:
      return stream_options(v, out);
    case member_max_tokens:
      out.max_tokens_value = scalar_span(v);
      return limit(v, "max_tokens", output_tokens_per_choice_max, out.max_tokens);
    case member_max_completion_tokens:
      out.max_completion_tokens_value = scalar_span(v);
      return limit(v, "max_completion_tokens", output_tokens_per_choice_max, out.max_completion_tokens);
  }
  if (auto e = json::validate(v, member_depth)) return malformed(e);
  return {};
}

Status Inspector::limit(od::value v, std::string_view name, int64_t max, std::optional<int64_t>& out) {
  const std::string must = std::string(name) + " must be an integer >= 1";
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e);
  if (type == od::json_type::null) {
    if (auto e = json::validate(v, member_depth)) return malformed(e);
    out.reset();
    return {};
  }
  if (type != od::json_type::number) return invalid(must);
  od::number_type number_type;
  if (v.get_number_type().get(number_type)) return invalid(must);
  if (number_type == od::number_type::unsigned_integer) {
    return invalid(std::string(name) + " must be at most " + std::to_string(max));
  }
  int64_t x = 0;
  if (number_type != od::number_type::signed_integer || v.get_int64().get(x)) return invalid(must);
  if (x < 1) return invalid(must);
  if (x > max) return invalid(std::string(name) + " must be at most " + std::to_string(max));
  out = x;
  return {};
}

Status Inspector::messages(od::value v, ChatRequest& out) {
  const char* must = "messages must be a non-empty array of objects";
  od::array arr;
  if (v.get_array().get(arr)) return invalid(must);
  int64_t chars = 0;
  auto read = each_element(arr, [&](od::value& item) -> Status {
    ++out.prompt.messages;
    return message(item, chars);
  });
  if (!read) return read;
  if (out.prompt.messages == 0) return invalid(must);
  out.prompt.chars += chars;
  return {};
}

Status Inspector::message(od::value v, int64_t& chars) {
  od::object obj;
  if (v.get_object().get(obj)) return invalid("messages must be a non-empty array of objects");
  return each_member(obj, [&](std::string_view key, od::value& value) -> Status {
    if (key == "content" || key == "tool_calls") {
      od::json_type type;
      if (auto e = value.type().get(type)) return malformed(e);
      if (type == od::json_type::array) {
        od::array arr;
        if (auto e = value.get_array().get(arr)) return malformed(e);
        return key == "content" ? content_parts(arr, chars) : tool_calls(arr, chars);
      }
    }
    if (key == "content" || key == "name") return count_if_string(value, message_member_depth, chars);
    if (auto e = json::validate(value, message_member_depth)) return malformed(e);
    return {};
  });
}

// Content parts: only the `text` of parts of type "text" counts (SPEC §4).
Status Inspector::content_parts(od::array parts, int64_t& chars) {
  return each_element(parts, [&](od::value& part) -> Status {
    od::json_type type;
    if (auto e = part.type().get(type)) return malformed(e);
    if (type != od::json_type::object) {
      if (auto e = json::validate(part, part_depth)) return malformed(e);
      return {};
    }
    od::object obj;
    if (auto e = part.get_object().get(obj)) return malformed(e);
    bool is_text = false;
    int64_t text_chars = 0;  // members come in any order: decided once "type" is known
    auto read = each_member(obj, [&](std::string_view key, od::value& value) -> Status {
      if (key == "text") return count_if_string(value, part_member_depth, text_chars);
      if (key == "type") {
        od::json_type t;
        if (auto e = value.type().get(t)) return malformed(e);
        if (t == od::json_type::string) {
          std::string_view part_type;
          if (auto e = json::read_string(value, part_type)) return malformed(e);
          is_text = part_type == "text";
          return {};
        }
      }
      if (auto e = json::validate(value, part_member_depth)) return malformed(e);
      return {};
    });
    if (!read) return read;
    if (is_text) chars += text_chars;
    return {};
  });
}

// Tool calls: each call's function.name and function.arguments count (SPEC §4).
Status Inspector::tool_calls(od::array calls, int64_t& chars) {
  return each_element(calls, [&](od::value& call) -> Status {
    od::json_type type;
    if (auto e = call.type().get(type)) return malformed(e);
    if (type != od::json_type::object) {
      if (auto e = json::validate(call, part_depth)) return malformed(e);
      return {};
    }
    od::object obj;
    if (auto e = call.get_object().get(obj)) return malformed(e);
    return each_member(obj, [&](std::string_view key, od::value& value) -> Status {
      od::json_type t;
      if (auto e = value.type().get(t)) return malformed(e);
      if (key != "function" || t != od::json_type::object) {
        if (auto e = json::validate(value, part_member_depth)) return malformed(e);
        return {};
      }
      od::object function;
      if (auto e = value.get_object().get(function)) return malformed(e);
      return each_member(function, [&](std::string_view fkey, od::value& fvalue) -> Status {
        if (fkey == "name" || fkey == "arguments") return count_if_string(fvalue, part_member_depth + 1, chars);
        if (auto e = json::validate(fvalue, part_member_depth + 1)) return malformed(e);
        return {};
      });
    });
  });
}

// `tools` counts as its raw text exactly as sent, whitespace included (SPEC §4).
Status Inspector::tools(od::value v, ChatRequest& out) {
  const json::SpanStart start = json::span_start(v, base_);
  if (auto e = json::validate(v, member_depth)) return malformed(e);
  size_t end = 0;
  if (auto e = json::span_end(start, doc_, base_, end)) return malformed(e);
  CAIRVA_ASSERT(end >= start.offset);
  out.prompt.chars += json::count_code_points(std::string_view(base_ + start.offset, end - start.offset));
  return {};
}

Status Inspector::stream_options(od::value v, ChatRequest& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e);
  const size_t start = offset_of(v.raw_json_token());
  if (type == od::json_type::null) {
    out.stream_options_value = scalar_span(v);
    if (auto e = json::validate(v, member_depth)) return malformed(e);
    return {};
  }
  if (type != od::json_type::object) return invalid("stream_options must be an object");
  od::object obj;
  if (auto e = v.get_object().get(obj)) return malformed(e);
  bool seen_include_usage = false;
  auto read = each_member(obj, [&](std::string_view key, od::value& value) -> Status {
    out.stream_options_has_members = true;
    if (key != "include_usage") {
      if (auto e = json::validate(value, member_depth + 1)) return malformed(e);
      return {};
    }
    if (seen_include_usage) return invalid("member \"stream_options.include_usage\" appears more than once");
    seen_include_usage = true;
    out.include_usage_value = scalar_span(value);
    bool is_null = false;
    if (value.is_null().get(is_null) == simdjson::SUCCESS && is_null) return {};
    if (value.get_bool().get(out.include_usage)) return invalid("stream_options.include_usage must be a boolean");
    return {};
  });
  if (!read) return read;
  size_t end = 0;
  if (auto e = json::end_of_consumed(doc_, base_).get(end)) return malformed(e);
  out.stream_options_value = ByteSpan{start, end - start};
  return {};
}

// Reads the document `scratch` has started iterating: `body` itself, or its copy.
Result<ChatRequest> inspect(std::string_view body, json::Scratch& scratch,
                            simdjson::simdjson_result<od::document> iterated) {
  od::document doc;
  if (auto e = std::move(iterated).get(doc)) return malformed(e);
  ChatRequest out;
  size_t open = 0;
  while (open < body.size() && json::is_space(body[open])) ++open;
  out.object_open = open;
  Inspector inspector(doc, scratch.base());
  if (auto s = inspector.run(out); !s) return s.error();
  // simdjson accepts a leading byte-order mark; the splice needs the '{' itself.
  if (out.object_open >= body.size() || body[out.object_open] != '{') {
    return invalid("request body must be a JSON object");
  }
  return out;
}

}  // namespace

Result<ChatRequest> inspect_chat_request(std::string_view body) {
  return json::with_scratch(body.size(), [&](json::Scratch& scratch) -> Result<ChatRequest> {
    return inspect(body, scratch, scratch.iterate(body));
  });
}

Result<ChatRequest> inspect_chat_request(std::string& body) {
  const size_t size = body.size();
  if (body.capacity() - size < in_place_slack_bytes) return inspect_chat_request(std::string_view(body));
  // The padding goes into the spare capacity as part of the string, so the parser reads
  // only bytes the string holds; it is taken off again on every way out.
  body.append(in_place_slack_bytes, ' ');
  CAIRVA_ASSERT(body.size() == size + in_place_slack_bytes);
  struct Unpad {
    std::string& body;
    size_t size;
    ~Unpad() { body.resize(size); }
  } unpad{body, size};
  const std::string_view text(body.data(), size);
  return json::with_scratch(size, [&](json::Scratch& scratch) -> Result<ChatRequest> {
    return inspect(text, scratch, scratch.iterate_in_place(text));
  });
}

std::string rewrite_chat_request(std::string_view body, const ChatRequest& request,
                                 const RewritePlan& plan) {
  std::vector<Edit> edits;
  const size_t after_open = request.object_open + 1;
  if (plan.per_choice_limit) {
    CAIRVA_ASSERT(*plan.per_choice_limit >= 0);
    const std::string value = std::to_string(*plan.per_choice_limit);
    bool replaced = false;
    if (request.max_tokens && request.max_tokens_value) {
      edits.push_back({request.max_tokens_value->offset, request.max_tokens_value->size, value});
      replaced = true;
    }
    if (request.max_completion_tokens && request.max_completion_tokens_value) {
      edits.push_back({request.max_completion_tokens_value->offset,
                       request.max_completion_tokens_value->size, value});
      replaced = true;
    }
    if (!replaced && request.max_tokens_value) {
      // "max_tokens": null was sent: give it the value rather than repeat the member.
      edits.push_back({request.max_tokens_value->offset, request.max_tokens_value->size, value});
    } else if (!replaced) {
      edits.push_back({after_open, 0, "\"max_tokens\":" + value + ","});
    }
  }
  if (plan.include_usage) {
    if (request.include_usage_value) {
      edits.push_back({request.include_usage_value->offset, request.include_usage_value->size, "true"});
    } else if (request.stream_options_value && request.stream_options_has_members) {
      edits.push_back({request.stream_options_value->offset + 1, 0, "\"include_usage\":true,"});
    } else if (request.stream_options_value) {
      // null or {}: the whole value is replaced.
      edits.push_back({request.stream_options_value->offset, request.stream_options_value->size,
                       "{\"include_usage\":true}"});
    } else {
      edits.push_back({after_open, 0, "\"stream_options\":{\"include_usage\":true},"});
    }
  }
  return splice(body, std::move(edits));
}

}  // namespace cairva::wire
