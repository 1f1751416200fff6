#include "wire/messages_request.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/assert.h"
#include "wire/estimate_walk.h"
#include "wire/json.h"
#include "wire/limits.h"
#include "wire/splice.h"

namespace cairva::wire {
namespace {

namespace od = json::od;
using simdjson::error_code;

Error invalid(std::string message) {
  return make_error(ErrorCode::invalid_request, std::move(message));
}

Error malformed(error_code e) {
  if (e == simdjson::DEPTH_ERROR) return invalid("request body is nested too deeply");
  return invalid("request body is not valid JSON: " + std::string(json::reason(e)));
}

Status checked(error_code e) {
  if (e) return malformed(e);
  return {};
}

// Members read by name; a second occurrence is refused because providers keep the last
// one and admission must hold for exactly what the provider will read.
enum Member : unsigned {
  member_model = 1u << 0,
  member_messages = 1u << 1,
  member_stream = 1u << 2,
  member_max_tokens = 1u << 3,
  member_thinking = 1u << 4,
  member_service_tier = 1u << 5,
};

Member member_of(std::string_view key) {
  if (key == "model") return member_model;
  if (key == "messages") return member_messages;
  if (key == "stream") return member_stream;
  if (key == "max_tokens") return member_max_tokens;
  if (key == "thinking") return member_thinking;
  if (key == "service_tier") return member_service_tier;
  return Member{0};
}

// Depths of the values read, for the nesting bound (the top-level object is depth 1).
constexpr int member_depth = 2;  // messages[i] and thinking's members are depth 3
constexpr int element_depth = 3;

// Runs fn(key, value) on each member of `obj` in order, up to the first failure.
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

bool is_null(od::value& v) {
  bool null = false;
  return v.is_null().get(null) == simdjson::SUCCESS && null;
}

// Reads one request: walks the whole document once, reading the members it knows,
// validating the rest and counting the input estimate's facts (estimate_walk.h) as it goes.
class Inspector {
 public:
  Inspector(const char* base, MessagesRequest& out) : base_(base), out_(out), walk_(out.prompt) {}

  Status top_level(od::document& doc);

 private:
  Status member(Member m, std::string_view key, od::value v);
  Status messages(od::value v);
  Status thinking(od::value v);
  // An integer in [1, output_tokens_per_choice_max] or null (nullopt); `span` gets the
  // integer's bytes.
  Status limit(od::value v, std::string_view name, int depth, std::optional<int64_t>& out,
               std::optional<ByteSpan>& span);

  const char* base_;
  MessagesRequest& out_;
  EstimateWalk walk_;
};

Status Inspector::top_level(od::document& doc) {
  od::json_type type;
  if (auto e = doc.type().get(type)) return malformed(e);
  if (type != od::json_type::object) return invalid("request body must be a JSON object");
  od::object obj;
  if (auto e = doc.get_object().get(obj)) return malformed(e);
  unsigned seen = 0;
  auto read = each_member(obj, [&](std::string_view key, od::value v) -> Status {
    const Member m = member_of(key);
    if (m != 0) {
      if (seen & m) return invalid("member \"" + std::string(key) + "\" appears more than once");
      seen |= m;
    }
    return member(m, key, v);
  });
  if (!read) return read;
  // Whatever follows the object (a second document, garbage) makes the body malformed.
  const char* next = nullptr;
  if (doc.current_location().get(next) == simdjson::SUCCESS) {
    return invalid("request body is not valid JSON: unexpected bytes after the object");
  }
  if (!(seen & member_model)) return invalid("model is required");
  if (!(seen & member_messages)) return invalid("messages is required");
  return {};
}

Status Inspector::member(Member m, std::string_view key, od::value v) {
  if (m == 0) return checked(walk_.member(key, v, member_depth));
  walk_.key(key);
  switch (m) {
    case member_model: {
      // The model's name is the one string that does not count (SPEC §4).
      std::string_view model;
      if (v.get_string().get(model)) return invalid("model must be a string");
      // Kept on the request's row: PostgreSQL's text cannot hold a NUL byte.
      if (model.find('\0') != std::string_view::npos)
        return invalid("model must not contain a NUL character");
      out_.model.assign(model);
      return {};
    }
    case member_messages:
      return messages(v);
    case member_stream:
      if (is_null(v)) return {};
      if (v.get_bool().get(out_.stream)) return invalid("stream must be a boolean");
      return {};
    case member_max_tokens:
      return limit(v, "max_tokens", member_depth, out_.max_tokens, out_.max_tokens_value);
    case member_thinking:
      return thinking(v);
    case member_service_tier: {
      if (is_null(v)) return {};
      std::string_view tier;
      if (auto e = json::read_string(v, tier)) {
        return e == simdjson::INCORRECT_TYPE ? invalid("service_tier must be a string")
                                             : malformed(e);
      }
      walk_.string(tier);
      out_.service_tier.emplace(tier);
      return {};
    }
  }
  return {};
}

Status Inspector::limit(od::value v, std::string_view name, int depth, std::optional<int64_t>& out,
                        std::optional<ByteSpan>& span) {
  const std::string must = std::string(name) + " must be an integer >= 1";
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e);
  if (type == od::json_type::null) return checked(json::validate(v, depth));
  if (type != od::json_type::number) return invalid(must);
  const std::string_view token = json::trim_right(v.raw_json_token());
  od::number_type number_type;
  if (v.get_number_type().get(number_type)) return invalid(must);
  const std::string at_most =
      std::string(name) + " must be at most " + std::to_string(output_tokens_per_choice_max);
  if (number_type == od::number_type::unsigned_integer) return invalid(at_most);
  int64_t x = 0;
  if (number_type != od::number_type::signed_integer || v.get_int64().get(x) || x < 1)
    return invalid(must);
  if (x > output_tokens_per_choice_max) return invalid(at_most);
  out = x;
  span = ByteSpan{static_cast<size_t>(token.data() - base_), token.size()};
  return {};
}

// Each entry of `messages` is one item; everything in it counts (SPEC §4).
Status Inspector::messages(od::value v) {
  const char* must = "messages must be a non-empty array of objects";
  od::array arr;
  if (v.get_array().get(arr)) return invalid(must);
  for (auto element : arr) {
    if (auto e = element.error()) return malformed(e);
    ++out_.prompt.items;
    od::object obj;
    if (element.value_unsafe().get_object().get(obj)) return invalid(must);
    if (auto e = walk_.object(obj, element_depth)) return malformed(e);
  }
  if (out_.prompt.items == 0) return invalid(must);
  return {};
}

// `{"type":"enabled","budget_tokens":N}` or any other object (disabled, adaptive): only
// the budget is read; every member counts as any other.
Status Inspector::thinking(od::value v) {
  if (is_null(v)) return {};
  od::object obj;
  if (v.get_object().get(obj)) return invalid("thinking must be an object");
  bool seen_budget = false;
  return each_member(obj, [&](std::string_view key, od::value value) -> Status {
    if (key != "budget_tokens") return checked(walk_.member(key, value, element_depth));
    walk_.key(key);
    if (seen_budget) return invalid("member \"thinking.budget_tokens\" appears more than once");
    seen_budget = true;
    return limit(value, "thinking.budget_tokens", element_depth, out_.thinking_budget,
                 out_.budget_tokens_value);
  });
}

}  // namespace

Result<MessagesRequest> inspect_messages_request(std::string_view body, MessagesCall call) {
  auto read =
      json::with_scratch(body.size(), [&](json::Scratch& scratch) -> Result<MessagesRequest> {
        od::document doc;
        if (auto e = scratch.iterate(body).get(doc)) return malformed(e);
        MessagesRequest out;
        Inspector inspector(scratch.base(), out);
        if (auto s = inspector.top_level(doc); !s) return s.error();
        return out;
      });
  if (read && call == MessagesCall::create && !read->max_tokens)
    return invalid("max_tokens is required");
  return read;
}

int64_t messages_per_choice_min(const MessagesRequest& request) {
  if (!request.thinking_budget) return 1;
  return std::min(*request.thinking_budget, thinking_budget_tokens_min) + 1;
}

bool messages_rewrite_needed(const MessagesRequest& request, int64_t per_choice_limit) {
  return request.max_tokens != per_choice_limit;
}

std::string rewrite_messages_request(std::string_view body, const MessagesRequest& request,
                                     int64_t per_choice_limit) {
  CAIRVA_ASSERT(request.max_tokens && request.max_tokens_value &&
                per_choice_limit <= *request.max_tokens);
  if (per_choice_limit == *request.max_tokens) return std::string(body);
  // Lowered: admission kept it at or above the least the rewrite may produce.
  CAIRVA_ASSERT(per_choice_limit >= messages_per_choice_min(request));
  std::vector<Edit> edits;
  edits.push_back({request.max_tokens_value->offset, request.max_tokens_value->size,
                   std::to_string(per_choice_limit)});
  // Only a lowered limit moves the budget: a request that asked for a budget at or above
  // its own max_tokens is the provider's to answer, as sent.
  if (request.thinking_budget && per_choice_limit <= *request.thinking_budget) {
    edits.push_back({request.budget_tokens_value->offset, request.budget_tokens_value->size,
                     std::to_string(per_choice_limit - 1)});
  }
  return splice(body, std::move(edits));
}

}  // namespace cairva::wire
