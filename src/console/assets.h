// The web console's files (SPEC-CONSOLE §5), compiled into the executable from
// console/dist by cmake/console_assets.cmake: no file is read and nothing is fetched at run
// time. Each listener serves its own audience's files at "/" (index.html) and under
// "/console/" (content-hashed names). Pure lookups over immutable data: thread-safe.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <utility>

namespace cairva::console {

enum class Audience {
  operators,  // the admin listener
  buyers,     // the public listener
};

struct Asset {
  std::string_view path;  // "/" or "/console/<name>-<hash>.<ext>"
  std::string_view content_type;
  std::string_view cache_control;  // index: no-cache; hashed names: immutable
  std::string_view body;
};

// Every file of an audience (generated).
std::span<const Asset> assets(Audience audience);

// The path's file, or nullptr. `target` may carry a query string (ignored).
const Asset* find_asset(Audience audience, std::string_view target);

// True for the paths the console owns on a listener: "/" and everything under
// "/console/". An unknown file there is a 404; a method other than GET or HEAD a 405.
bool is_console_path(std::string_view target);

// Headers on every console file: scripts and styles only from the gateway itself (no
// inline script or style), nothing else loaded, never framed, no MIME sniffing, no
// Referer carrying an allocation id elsewhere.
inline constexpr std::string_view content_security_policy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 4> security_headers{{
    {"Content-Security-Policy", content_security_policy},
    {"X-Frame-Options", "DENY"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
}};

}  // namespace cairva::console
