#include "wire/estimate_walk.h"

#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace od = json::od;

// Whether a string under member `name` of an object with MediaParent `parent` is a media
// payload (SPEC §4). Sorted by the name's length first: most keys match no length here.
bool is_media(std::string_view name, MediaParent parent) {
  switch (name.size()) {
    case 3:
      return name == "url" && (parent == MediaParent::image_url || parent == MediaParent::source);
    case 4:
      return name == "data" &&
             (parent == MediaParent::input_audio || parent == MediaParent::source);
    case 9:
      return name == "file_data" || name == "image_url";
    default:
      return false;
  }
}

}  // namespace

MediaParent media_parent_of(std::string_view name) {
  switch (name.size()) {  // by length first, as is_media: called for every member walked
    case 6:
      return name == "source" ? MediaParent::source : MediaParent::other;
    case 9:
      return name == "image_url" ? MediaParent::image_url : MediaParent::other;
    case 11:
      return name == "input_audio" ? MediaParent::input_audio : MediaParent::other;
    default:
      return MediaParent::other;
  }
}

simdjson::error_code EstimateWalk::member(std::string_view name, od::value v, int depth,
                                          MediaParent parent) {
  key(name);
  if (is_media(name, parent)) {
    if (depth > json_depth_max) return simdjson::DEPTH_ERROR;
    int64_t ignored = 0;  // checked and consumed; it counts as one part, not as characters
    const simdjson::error_code e = json::count_string(v, ignored);
    if (e == simdjson::SUCCESS) ++facts_.media;
    if (e != simdjson::INCORRECT_TYPE) return e;
    // Not a string: walked as any other value.
  }
  return walk(v, depth, media_parent_of(name));
}

simdjson::error_code EstimateWalk::value(od::value v, int depth) {
  return walk(v, depth, MediaParent::other);
}

simdjson::error_code EstimateWalk::object(od::object& obj, int depth, MediaParent parent) {
  for (auto entry : obj) {
    if (auto e = entry.error()) return e;
    od::field& field = entry.value_unsafe();  // used in place: copying a field out is slow
    std::string_view name;
    if (auto e = json::read_key(field, name)) return e;
    if (auto e = member(name, field.value(), depth + 1, parent)) return e;
  }
  return simdjson::SUCCESS;
}

// `parent` applies when `v` is an object: its members' media rule.
simdjson::error_code EstimateWalk::walk(od::value v, int depth, MediaParent parent) {
  if (depth > json_depth_max) return simdjson::DEPTH_ERROR;
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  switch (type) {
    case od::json_type::object: {
      od::object obj;
      if (auto e = v.get_object().get(obj)) return e;
      return object(obj, depth, parent);
    }
    case od::json_type::array: {
      od::array arr;
      if (auto e = v.get_array().get(arr)) return e;
      for (auto element : arr) {
        if (auto e = element.error()) return e;
        if (auto e = walk(element.value_unsafe(), depth + 1, MediaParent::other)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::string:
      return string(v);
    default:
      return json::validate(v, depth);  // a scalar: checked, adds nothing
  }
}

}  // namespace cairva::wire
