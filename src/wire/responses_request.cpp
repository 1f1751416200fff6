#include "wire/responses_request.h"

#include <array>
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
  member_input,
  member_stream,
  member_max_output_tokens,
  member_service_tier,
  member_background,
  member_count,
};
constexpr auto member_names = std::to_array<std::string_view>(
    {"model", "input", "stream", "max_output_tokens", "service_tier", "background"});
static_assert(member_names.size() == member_count);

// Depth of input's entries (the top-level object is depth 1).
constexpr int item_depth = 3;

class Inspector {
 public:
  Inspector(const char* base, ResponsesRequest& out) : base_(base), out_(out), walk_(out.prompt) {}

  EstimateWalk& walk() { return walk_; }
  Status member(Member m, std::string_view key, od::value v);

 private:
  Status input(od::value v);

  const char* base_;
  ResponsesRequest& out_;
  EstimateWalk walk_;
};

Status Inspector::member(Member m, std::string_view key, od::value v) {
  walk_.key(key);
  switch (m) {
    case member_model:  // the model's name is the one string that does not count (SPEC §4)
      return inspect::model(v, out_.model);
    case member_input:
      return input(v);
    case member_stream:
      return inspect::boolean(v, "stream", out_.stream);
    case member_max_output_tokens:
      out_.max_output_tokens_value = inspect::scalar_span(v, base_);
      return inspect::limit(v, "max_output_tokens", output_tokens_per_choice_max,
                            out_.max_output_tokens);
    case member_service_tier:
      return inspect::optional_string(v, "service_tier", walk_, out_.service_tier);
    case member_background: {
      bool background = false;
      if (auto s = inspect::boolean(v, "background", background); !s) return s;
      // Its usage would arrive only through later polling: nothing could settle the hold.
      if (background) return invalid("background responses are not supported");
      return {};
    }
    case member_count:
      break;
  }
  return {};
}

// A string (one item) or an array whose entries are the items; null is absent.
Status Inspector::input(od::value v) {
  const char* must = "input must be a string or an array of input items";
  od::json_type type;
  if (auto e = v.type().get(type)) return inspect::malformed(e);
  switch (type) {
    case od::json_type::null:
      return checked(json::validate(v, member_depth));
    case od::json_type::string:
      out_.prompt.items = 1;
      return checked(walk_.string(v));
    case od::json_type::array: {
      od::array arr;
      if (auto e = v.get_array().get(arr)) return inspect::malformed(e);
      return inspect::each_element(arr, [&](od::value& item) -> Status {
        ++out_.prompt.items;
        return checked(walk_.value(item, item_depth));
      });
    }
    default:
      return invalid(must);
  }
}

Result<ResponsesRequest> read_request(std::string_view body, json::Scratch& scratch) {
  od::document doc;
  if (auto e = scratch.iterate(body).get(doc)) return inspect::malformed(e);
  ResponsesRequest out;
  Inspector inspector(scratch.base(), out);
  inspect::SeenMembers seen;
  auto read = inspect::named_members<member_names, Member>(
      doc, body, out.object_open, inspector.walk(), seen,
      [&](Member m, std::string_view key, od::value v) { return inspector.member(m, key, v); });
  if (!read) return read.error();
  if (auto s = inspect::required(seen, member_names, {member_model}); !s) return s.error();
  return out;
}

}  // namespace

Result<ResponsesRequest> inspect_responses_request(std::string_view body) {
  return json::with_scratch(body.size(),
                            [&](json::Scratch& scratch) { return read_request(body, scratch); });
}

bool responses_rewrite_needed(const ResponsesRequest& request, int64_t per_choice_limit) {
  return request.max_output_tokens != per_choice_limit;
}

std::string rewrite_responses_request(std::string_view body, const ResponsesRequest& request,
                                      int64_t per_choice_limit) {
  CAIRVA_ASSERT(per_choice_limit >= 1);
  const std::string value = std::to_string(per_choice_limit);
  std::vector<Edit> edits;
  if (request.max_output_tokens_value) {
    if (request.max_output_tokens != per_choice_limit) {
      edits.push_back(
          {request.max_output_tokens_value->offset, request.max_output_tokens_value->size, value});
    }
  } else {
    edits.push_back({request.object_open + 1, 0, "\"max_output_tokens\":" + value + ","});
  }
  return splice(body, std::move(edits));
}

}  // namespace cairva::wire
