#include "wire/chat_request.h"

#include <array>
#include <string>

#include "base/assert.h"
#include "wire/estimate_walk.h"
#include "wire/inspect.h"
#include "wire/json.h"
#include "wire/limits.h"
#include "wire/splice.h"

namespace cairva::wire {
namespace {

namespace od = json::od;
static_assert(in_place_slack_bytes == simdjson::SIMDJSON_PADDING);
using inspect::checked;
using inspect::each_element;
using inspect::each_member;
using inspect::invalid;
using inspect::malformed;
using inspect::member_depth;

// Members read by name: member_names[m] is member m.
enum Member : size_t {
  member_model,
  member_messages,
  member_tools,
  member_n,
  member_stream,
  member_stream_options,
  member_max_tokens,
  member_max_completion_tokens,
  member_service_tier,
  member_count,
};
constexpr auto member_names =
    std::to_array<std::string_view>({"model", "messages", "tools", "n", "stream", "stream_options",
                                     "max_tokens", "max_completion_tokens", "service_tier"});
static_assert(member_names.size() == member_count);

// Depth of messages' entries, for the nesting bound (the top-level object is depth 1).
constexpr int message_depth = 3;

// Reads one request: walks the whole document once, reading the members it knows,
// validating the rest and counting the input estimate's facts (estimate_walk.h) as it goes.
class Inspector {
 public:
  Inspector(od::document& doc, const char* base, ChatRequest& out)
      : doc_(doc), base_(base), out_(out), walk_(out.prompt) {}

  Status run(std::string_view body);

 private:
  Status member(Member m, std::string_view key, od::value v);
  Status messages(od::value v);
  Status stream_options(od::value v);

  size_t offset_of(std::string_view token) const {
    return static_cast<size_t>(token.data() - base_);
  }
  // The span of a scalar value about to be read.
  ByteSpan scalar_span(od::value& v) const { return inspect::scalar_span(v, base_); }

  od::document& doc_;
  const char* base_;
  ChatRequest& out_;
  EstimateWalk walk_;
};

Status Inspector::run(std::string_view body) {
  inspect::SeenMembers seen;
  auto read = inspect::named_members<member_names, Member>(
      doc_, body, out_.object_open, walk_, seen,
      [&](Member m, std::string_view key, od::value v) { return member(m, key, v); });
  if (!read) return read;
  return inspect::required(seen, member_names, {member_model, member_messages});
}

Status Inspector::member(Member m, std::string_view key, od::value v) {
  switch (m) {
    case member_model:
      walk_.key(key);  // the model's name is the one string that does not count (SPEC §4)
      return inspect::model(v, out_.model);
    case member_messages:
      walk_.key(key);
      return messages(v);
    case member_n: {
      walk_.key(key);
      std::optional<int64_t> n;
      if (auto s = inspect::limit(v, "n", choices_max, n); !s) return s;
      out_.n = n.value_or(1);
      return {};
    }
    case member_stream:
      walk_.key(key);
      return inspect::boolean(v, "stream", out_.stream);
    case member_stream_options:
      walk_.key(key);
      return stream_options(v);
    case member_max_tokens:
      walk_.key(key);
      out_.max_tokens_value = scalar_span(v);
      return inspect::limit(v, "max_tokens", output_tokens_per_choice_max, out_.max_tokens);
    case member_max_completion_tokens:
      walk_.key(key);
      out_.max_completion_tokens_value = scalar_span(v);
      return inspect::limit(v, "max_completion_tokens", output_tokens_per_choice_max,
                            out_.max_completion_tokens);
    case member_service_tier:
      // A string or null; the agreement decides which tiers it allows (SPEC §2).
      walk_.key(key);
      return inspect::optional_string(v, "service_tier", walk_, out_.service_tier);
    case member_tools:  // read by name only to refuse a repeated one; counted as any member
    case member_count:
      break;
  }
  return checked(walk_.member(key, v, member_depth));
}

// Each entry of `messages` is one item; everything in it counts (SPEC §4).
Status Inspector::messages(od::value v) {
  const char* must = "messages must be a non-empty array of objects";
  od::array arr;
  if (v.get_array().get(arr)) return invalid(must);
  auto read = each_element(arr, [&](od::value& item) -> Status {
    ++out_.prompt.items;
    od::object obj;
    if (item.get_object().get(obj)) return invalid(must);
    return checked(walk_.object(obj, message_depth));
  });
  if (!read) return read;
  if (out_.prompt.items == 0) return invalid(must);
  return {};
}

Status Inspector::stream_options(od::value v) {
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e);
  const size_t start = offset_of(v.raw_json_token());
  if (type == od::json_type::null) {
    out_.stream_options_value = scalar_span(v);
    if (auto e = json::validate(v, member_depth)) return malformed(e);
    return {};
  }
  if (type != od::json_type::object) return invalid("stream_options must be an object");
  od::object obj;
  if (auto e = v.get_object().get(obj)) return malformed(e);
  bool seen_include_usage = false;
  auto read = each_member(obj, [&](std::string_view key, od::value& value) -> Status {
    out_.stream_options_has_members = true;
    if (key != "include_usage") return checked(walk_.member(key, value, member_depth + 1));
    walk_.key(key);
    if (seen_include_usage) return inspect::repeated("stream_options.include_usage");
    seen_include_usage = true;
    out_.include_usage_value = scalar_span(value);
    return inspect::boolean(value, "stream_options.include_usage", out_.include_usage);
  });
  if (!read) return read;
  size_t end = 0;
  if (auto e = json::end_of_consumed(doc_, base_).get(end)) return malformed(e);
  out_.stream_options_value = ByteSpan{start, end - start};
  return {};
}

// Reads the document `scratch` has started iterating: `body` itself, or its copy.
Result<ChatRequest> read_request(std::string_view body, json::Scratch& scratch,
                                 simdjson::simdjson_result<od::document> iterated) {
  od::document doc;
  if (auto e = std::move(iterated).get(doc)) return malformed(e);
  ChatRequest out;
  Inspector inspector(doc, scratch.base(), out);
  if (auto s = inspector.run(body); !s) return s.error();
  return out;
}

}  // namespace

Result<ChatRequest> inspect_chat_request(std::string_view body) {
  return json::with_scratch(body.size(), [&](json::Scratch& scratch) -> Result<ChatRequest> {
    return read_request(body, scratch, scratch.iterate(body));
  });
}

Result<ChatRequest> inspect_chat_request(std::string& body) {
  const size_t size = body.size();
  if (body.capacity() - size < in_place_slack_bytes)
    return inspect_chat_request(std::string_view(body));
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
    return read_request(text, scratch, scratch.iterate_in_place(text));
  });
}

bool rewrite_needed(const ChatRequest& request, const RewritePlan& plan) {
  if (plan.include_usage) return true;
  if (!request.max_tokens_value && !request.max_completion_tokens_value) return true;
  // A member present with another value than the plan's, or null (its value then nullopt).
  if (request.max_tokens_value && request.max_tokens != plan.per_choice_limit) return true;
  if (request.max_completion_tokens_value && request.max_completion_tokens != plan.per_choice_limit)
    return true;
  return false;
}

std::string rewrite_chat_request(std::string_view body, const ChatRequest& request,
                                 const RewritePlan& plan) {
  CAIRVA_ASSERT(plan.per_choice_limit >= 1);
  CAIRVA_ASSERT(plan.limit_field == limit_field_max_completion_tokens ||
                plan.limit_field == limit_field_max_tokens);
  std::vector<Edit> edits;
  const size_t after_open = request.object_open + 1;
  const std::string value = std::to_string(plan.per_choice_limit);
  // Every limit member the request carries, null ones too, ends up equal to the hold.
  if (request.max_tokens_value && request.max_tokens != plan.per_choice_limit) {
    edits.push_back({request.max_tokens_value->offset, request.max_tokens_value->size, value});
  }
  if (request.max_completion_tokens_value &&
      request.max_completion_tokens != plan.per_choice_limit) {
    edits.push_back({request.max_completion_tokens_value->offset,
                     request.max_completion_tokens_value->size, value});
  }
  if (!request.max_tokens_value && !request.max_completion_tokens_value) {
    edits.push_back({after_open, 0, "\"" + std::string(plan.limit_field) + "\":" + value + ","});
  }
  if (plan.include_usage) {
    if (request.include_usage_value) {
      edits.push_back(
          {request.include_usage_value->offset, request.include_usage_value->size, "true"});
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
