#include "wire/embeddings_request.h"

#include <array>

#include "wire/estimate_walk.h"
#include "wire/inspect.h"
#include "wire/json.h"

namespace cairva::wire {
namespace {

namespace od = json::od;
using inspect::checked;
using inspect::invalid;
using inspect::malformed;

constexpr std::string_view input_must =
    "input must be a string, an array of strings, an array of token integers or an array of token "
    "arrays";

// Members read by name: member_names[m] is member m.
enum Member : size_t {
  member_model,
  member_input,
  member_stream,
  member_count,
};
constexpr auto member_names = std::to_array<std::string_view>({"model", "input", "stream"});
static_assert(member_names.size() == member_count);

// The Embeddings API has no stream: a client asking for one would wait for events that never
// come (and OpenAI refuses the argument), so it is refused here rather than forwarded.
constexpr std::string_view no_stream =
    "stream: embeddings are not streamed; remove \"stream\" or set it to false";

// One token: an integer >= 0.
Status token(od::value& v) {
  od::number_type type;
  int64_t id = 0;
  if (v.get_number_type().get(type) || type != od::number_type::signed_integer ||
      v.get_int64().get(id) || id < 0) {
    return invalid(std::string(input_must));
  }
  return {};
}

// A token array's tokens, counted into `tokens`. A nested value is refused before it is
// read, so no depth bound is needed here.
Status token_array(od::value& v, int64_t& tokens) {
  od::array arr;
  if (v.get_array().get(arr)) return invalid(std::string(input_must));
  const int64_t before = tokens;
  auto read = inspect::each_element(arr, [&](od::value& t) -> Status {
    ++tokens;
    return token(t);
  });
  if (!read) return read;
  if (tokens == before) return invalid("input must not hold an empty token array");
  return {};
}

// The forms of `input`; an array's first element decides which one it is.
enum class Form : uint8_t { unknown, strings, tokens, token_arrays };

Status input(od::value v, EmbeddingsRequest& out, EstimateWalk& walk) {
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e);
  if (type == od::json_type::string) {
    walk.key("input");
    out.prompt.items = 1;
    return checked(walk.string(v));
  }
  od::array arr;
  if (type != od::json_type::array || v.get_array().get(arr))
    return invalid(std::string(input_must));
  Form form = Form::unknown;
  auto read = inspect::each_element(arr, [&](od::value& e) -> Status {
    od::json_type et;
    if (auto err = e.type().get(et)) return malformed(err);
    const Form mine = et == od::json_type::string   ? Form::strings
                      : et == od::json_type::number ? Form::tokens
                      : et == od::json_type::array  ? Form::token_arrays
                                                    : Form::unknown;
    if (mine == Form::unknown || (form != Form::unknown && mine != form))
      return invalid(std::string(input_must));
    if (form == Form::unknown && mine == Form::strings)
      walk.key("input");  // a token form adds no characters
    form = mine;
    switch (form) {
      case Form::strings:
        ++out.prompt.items;
        return checked(walk.string(e));
      case Form::tokens:
        out.prompt.items = 1;  // the whole array is one input
        ++out.prompt.tokens;
        return token(e);
      case Form::token_arrays:
        ++out.prompt.items;
        return token_array(e, out.prompt.tokens);
      case Form::unknown:
        break;
    }
    return invalid(std::string(input_must));
  });
  if (!read) return read;
  if (form == Form::unknown) return invalid("input must not be empty");
  return {};
}

Result<EmbeddingsRequest> read_request(std::string_view body, json::Scratch& scratch) {
  od::document doc;
  if (auto e = scratch.iterate(body).get(doc)) return malformed(e);
  EmbeddingsRequest out;
  EstimateWalk walk(out.prompt);
  inspect::SeenMembers seen;
  size_t object_open = 0;
  auto read = inspect::named_members<member_names, Member>(
      doc, body, object_open, walk, seen,
      [&](Member m, std::string_view key, od::value v) -> Status {
        switch (m) {
          case member_model:
            walk.key(key);  // the model's name is the one string that does not count (SPEC §4)
            return inspect::model(v, out.model);
          case member_input:
            return input(v, out, walk);  // counts its key by its form
          case member_stream: {
            walk.key(key);  // a boolean adds nothing
            bool stream = false;
            if (auto s = inspect::boolean(v, "stream", stream); !s) return s;
            if (stream) return invalid(std::string(no_stream));
            return {};
          }
          case member_count:
            break;
        }
        return {};
      });
  if (!read) return read.error();
  if (auto s = inspect::required(seen, member_names, {member_model, member_input}); !s)
    return s.error();
  return out;
}

}  // namespace

Result<EmbeddingsRequest> inspect_embeddings_request(std::string_view body) {
  return json::with_scratch(body.size(),
                            [&](json::Scratch& scratch) { return read_request(body, scratch); });
}

}  // namespace cairva::wire
