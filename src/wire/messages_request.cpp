#include "wire/messages_request.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "base/assert.h"
#include "wire/estimate_walk.h"
#include "wire/inspect.h"
#include "wire/json.h"
#include "wire/limits.h"
#include "wire/splice.h"

namespace cairva::wire {
namespace {

namespace od = json::od;
using inspect::checked;
using inspect::invalid;
using inspect::member_depth;

// Members read by name: member_names[m] is member m.
enum Member : size_t {
  member_model,
  member_messages,
  member_stream,
  member_max_tokens,
  member_thinking,
  member_service_tier,
  member_count,
};
constexpr auto member_names = std::to_array<std::string_view>(
    {"model", "messages", "stream", "max_tokens", "thinking", "service_tier"});
static_assert(member_names.size() == member_count);

// Depth of messages' entries and of thinking's members (the top-level object is depth 1).
constexpr int element_depth = 3;

class Inspector {
 public:
  Inspector(const char* base, MessagesRequest& out) : base_(base), out_(out), walk_(out.prompt) {}

  EstimateWalk& walk() { return walk_; }
  Status member(Member m, std::string_view key, od::value v);

 private:
  Status messages(od::value v);
  Status thinking(od::value v);

  const char* base_;
  MessagesRequest& out_;
  EstimateWalk walk_;
};

Status Inspector::member(Member m, std::string_view key, od::value v) {
  walk_.key(key);
  switch (m) {
    case member_model:  // the model's name is the one string that does not count (SPEC §4)
      return inspect::model(v, out_.model);
    case member_messages:
      return messages(v);
    case member_stream:
      return inspect::boolean(v, "stream", out_.stream);
    case member_max_tokens:
      out_.max_tokens_value = inspect::scalar_span(v, base_);
      return inspect::limit(v, "max_tokens", output_tokens_per_choice_max, out_.max_tokens);
    case member_thinking:
      return thinking(v);
    case member_service_tier:
      return inspect::optional_string(v, "service_tier", walk_, out_.service_tier);
    case member_count:
      break;
  }
  return {};
}

// Each entry of `messages` is one item; everything in it counts (SPEC §4).
Status Inspector::messages(od::value v) {
  const char* must = "messages must be a non-empty array of objects";
  od::array arr;
  if (v.get_array().get(arr)) return invalid(must);
  auto read = inspect::each_element(arr, [&](od::value& item) -> Status {
    ++out_.prompt.items;
    od::object obj;
    if (item.get_object().get(obj)) return invalid(must);
    return checked(walk_.object(obj, element_depth));
  });
  if (!read) return read;
  if (out_.prompt.items == 0) return invalid(must);
  return {};
}

// `{"type":"enabled","budget_tokens":N}` or any other object (disabled, adaptive): only
// the budget is read; every member counts as any other.
Status Inspector::thinking(od::value v) {
  od::json_type type;
  if (auto e = v.type().get(type)) return inspect::malformed(e);
  if (type == od::json_type::null) return checked(json::validate(v, member_depth));
  od::object obj;
  if (type != od::json_type::object || v.get_object().get(obj))
    return invalid("thinking must be an object");
  bool seen_budget = false;
  return inspect::each_member(obj, [&](std::string_view key, od::value value) -> Status {
    if (key != "budget_tokens") return checked(walk_.member(key, value, element_depth));
    walk_.key(key);
    if (seen_budget) return inspect::repeated("thinking.budget_tokens");
    seen_budget = true;
    out_.budget_tokens_value = inspect::scalar_span(value, base_);
    return inspect::limit(value, "thinking.budget_tokens", output_tokens_per_choice_max,
                          out_.thinking_budget);
  });
}

Result<MessagesRequest> read_request(std::string_view body, json::Scratch& scratch) {
  od::document doc;
  if (auto e = scratch.iterate(body).get(doc)) return inspect::malformed(e);
  MessagesRequest out;
  Inspector inspector(scratch.base(), out);
  inspect::SeenMembers seen;
  size_t object_open = 0;  // nothing is inserted: every edit replaces a value
  auto read = inspect::named_members<member_names, Member>(
      doc, body, object_open, inspector.walk(), seen,
      [&](Member m, std::string_view key, od::value v) { return inspector.member(m, key, v); });
  if (!read) return read.error();
  if (auto s = inspect::required(seen, member_names, {member_model, member_messages}); !s)
    return s.error();
  return out;
}

}  // namespace

Result<MessagesRequest> inspect_messages_request(std::string_view body, MessagesCall call) {
  auto read = json::with_scratch(
      body.size(), [&](json::Scratch& scratch) { return read_request(body, scratch); });
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
