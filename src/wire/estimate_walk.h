// SPEC §4's input estimate, counted while an API's inspector reads a request body: one
// rule for every API (SPEC-APIS §2). `chars` is the code points, once unescaped, of every
// object key and every string value of the body except the top-level `model` value and
// media payloads; each media payload adds media_part_tokens_estimate instead. A media
// payload is a string under a `file_data` or `image_url` key, under `url` inside an
// `image_url` object, under `data` inside an `input_audio` object, or under `data`/`url`
// inside a `source` object. Numbers, booleans and nulls add nothing.
//
// The walker is the inspectors' one pass over the body: it checks every byte it walks
// (structure, numbers, literals, escapes, nesting up to json_depth_max) as
// json::validate does, and counts without unescaping or allocating. How an inspector
// uses it (chat_request.cpp is the first):
//  - It iterates the top-level object itself (to refuse repeated members it reads, and
//    read those by name) and, for each member, either
//      * reads the member itself: key(name), then string(...) for any string it reads
//        but the top-level `model` value (numbers, booleans and nulls add nothing), or
//        walks an object member's own members with key() / member() likewise; or
//      * leaves it to the walker: member(name, value, depth), which counts the name and
//        walks the value whole.
//  - For its list of items (`messages`, `input`) it counts PromptFacts::items itself and
//    hands each element to value(), or, once it has checked the element's type and
//    opened it, to object().
//  - Counts that are exact rather than estimated (an embeddings token array's length) go
//    into PromptFacts::tokens directly; a walked array of numbers adds nothing.
// `depth` is always the nesting depth of the value handed over: the top-level object is
// 1, its members' values 2.
//
// Internal to cairva_wire (it exposes simdjson), like json.h.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/estimate.h"
#include "wire/json.h"

namespace cairva::wire {

// The key an object is the value of, as far as the media rule tells them apart.
enum class MediaParent : uint8_t { other, image_url, input_audio, source };

// The MediaParent an object under key `name` has.
MediaParent media_parent_of(std::string_view name);

class EstimateWalk {
 public:
  explicit EstimateWalk(core::PromptFacts& facts) : facts_(facts) {}

  // A member name the inspector read (json::read_key gives it unescaped).
  void key(std::string_view name) { facts_.chars += json::count_code_points(name); }
  // A string value the inspector read itself, unescaped.
  void string(std::string_view unescaped) { facts_.chars += json::count_code_points(unescaped); }
  // A string value the inspector has not read: counted and consumed; INCORRECT_TYPE,
  // with `v` left unread, when it is not a string.
  simdjson::error_code string(json::od::value& v) { return json::count_string(v, facts_.chars); }

  // Member `name` of an object whose own MediaParent is `parent`: the name counts, and
  // the value is walked whole (a media payload when the name and parent make it one).
  simdjson::error_code member(std::string_view name, json::od::value v, int depth,
                              MediaParent parent = MediaParent::other);
  // A value that is no object's member (an array's element, a whole document).
  simdjson::error_code value(json::od::value v, int depth);
  // An object the inspector opened: every member, as member() does.
  simdjson::error_code object(json::od::object& obj, int depth,
                              MediaParent parent = MediaParent::other);

 private:
  simdjson::error_code walk(json::od::value v, int depth, MediaParent parent);

  core::PromptFacts& facts_;
};

}  // namespace cairva::wire
