#include "console/assets.h"

namespace cairva::console {

namespace {

constexpr std::string_view assets_prefix = "/console/";

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace

const Asset* find_asset(Audience audience, std::string_view target) {
  const std::string_view path = path_of(target);
  for (const Asset& a : assets(audience)) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

bool is_console_path(std::string_view target) {
  const std::string_view path = path_of(target);
  return path == "/" || path.starts_with(assets_prefix);
}

}  // namespace cairva::console
