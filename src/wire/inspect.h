// What every API's request inspector (chat_request.cpp, responses_request.cpp,
// embeddings_request.cpp, messages_request.cpp) shares: the errors a bad body gets,
// iteration that stops at the first failure, the top-level walk over the members it reads
// by name (named_members: a repeat refused, the rest validated and counted), and the
// readers of the members several APIs have (model, a token limit, a boolean, a string).
// Each inspector walks its body once with EstimateWalk (estimate_walk.h).
//
// Internal to cairva_wire (it exposes simdjson), like json.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"
#include "wire/byte_span.h"
#include "wire/estimate_walk.h"
#include "wire/json.h"

namespace cairva::wire::inspect {

namespace od = json::od;

using json::member_depth;

// ErrorCode::invalid_request with `message`.
Error invalid(std::string message);
// A member read by name that a body holds twice, `name` with its path ("thinking.budget_tokens").
// Providers keep the last one, and admission must hold for exactly what the provider reads.
Error repeated(std::string_view name);
// A syntax error as the client reads it: "request body is not valid JSON: <why>", or
// "nested too deeply".
Error malformed(simdjson::error_code e);
inline Status checked(simdjson::error_code e) {
  if (e) return malformed(e);
  return {};
}

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

// Reads the top-level object of `doc` (iterated over `body`, whose first byte is at
// `base`): fn(key, value) for each member, then refuses bytes after the object. Returns
// the offset of the object's '{' in `body` through `object_open`.
template <class Fn>
Status top_level_object(od::document& doc, std::string_view body, size_t& object_open, Fn&& fn) {
  od::json_type type;
  if (auto e = doc.type().get(type)) return malformed(e);
  if (type != od::json_type::object) return invalid("request body must be a JSON object");
  od::object obj;
  if (auto e = doc.get_object().get(obj)) return malformed(e);
  if (auto s = each_member(obj, fn); !s) return s;
  // Whatever follows the object (a second document, garbage) makes the body malformed.
  const char* next = nullptr;
  if (doc.current_location().get(next) == simdjson::SUCCESS) {
    return invalid("request body is not valid JSON: unexpected bytes after the object");
  }
  size_t open = 0;
  while (open < body.size() && json::is_space(body[open])) ++open;
  // simdjson accepts a leading byte-order mark; a splice needs the '{' itself.
  if (open >= body.size() || body[open] != '{')
    return invalid("request body must be a JSON object");
  object_open = open;
  return {};
}

// Which of an inspector's named members a body holds: member i is names[i] of its table.
class SeenMembers {
 public:
  static constexpr size_t members_max = 32;
  bool has(size_t member) const { return (bits_ >> member) & 1u; }
  void add(size_t member) { bits_ |= uint32_t{1} << member; }

 private:
  uint32_t bits_ = 0;
};

// The index of `key` in `names`, or names.size() when it is none of them. The names are
// constants, so each comparison compiles to a length check and a fixed-size compare, as a
// hand-written chain of ifs would.
template <const auto& names>
size_t member_index(std::string_view key) {
  return [key]<size_t... I>(std::index_sequence<I...>) {
    size_t m = names.size();
    (void)((key == names[I] ? (m = I, true) : false) || ...);
    return m;
  }
  (std::make_index_sequence<names.size()>{});
}

// Reads the top-level object as top_level_object does, for an inspector whose members read
// by name are `names`, in the order of its `Member` enum (names[i] is member i). For each
// member: fn(member, key, value) for a named one, refused when it appears again
// (repeated); walk.member(...) for any other, so that every byte is validated and counted.
// `seen` gets the named members the body holds.
template <const auto& names, class Member, class Fn>
Status named_members(od::document& doc, std::string_view body, size_t& object_open,
                     EstimateWalk& walk, SeenMembers& seen, Fn&& fn) {
  static_assert(names.size() <= SeenMembers::members_max);
  return top_level_object(doc, body, object_open, [&](std::string_view key, od::value v) -> Status {
    const size_t m = member_index<names>(key);
    if (m == names.size()) return checked(walk.member(key, v, member_depth));
    if (seen.has(m)) return Status(repeated(key));
    seen.add(m);
    return fn(static_cast<Member>(m), key, v);
  });
}

// "<name> is required" for the first of `members` the body lacks.
template <size_t N>
Status required(const SeenMembers& seen, const std::array<std::string_view, N>& names,
                std::initializer_list<size_t> members) {
  for (const size_t m : members) {
    if (!seen.has(m)) return invalid(std::string(names[m]) + " is required");
  }
  return {};
}

// A value's span, read before the value (a scalar's whole token).
inline ByteSpan scalar_span(od::value& v, const char* base) {
  const std::string_view token = json::trim_right(v.raw_json_token());
  return ByteSpan{static_cast<size_t>(token.data() - base), token.size()};
}

// `model`: a string without a NUL byte (PostgreSQL's text cannot hold one). Its value is
// the one string the estimate leaves out: the caller counts the key only.
Status model(od::value v, std::string& out);
// A token limit: null (nullopt) or an integer in [1, max], the messages naming `name`.
Status limit(od::value v, std::string_view name, int64_t max, std::optional<int64_t>& out);
// A boolean or null (false).
Status boolean(od::value v, std::string_view name, bool& out);
// A string or null (nullopt), counted by `walk`.
Status optional_string(od::value v, std::string_view name, EstimateWalk& walk,
                       std::optional<std::string>& out);

}  // namespace cairva::wire::inspect
