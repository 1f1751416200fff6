// The web console on the listeners (SPEC-CONSOLE §5): GET and HEAD of "/" and
// "/console/<file>" answer the audience's compiled-in file with the console's security
// headers and its Cache-Control; an unknown file is 404 not_found, another method 405.
// The API routes never reach here (console::is_console_path decides first).
#pragma once

#include <boost/beast/http/verb.hpp>
#include <string>
#include <string_view>

#include "base/error_code.h"
#include "console/assets.h"
#include "gateway/exchange.h"

namespace cairva::gateway {

struct ConsoleAnswer {
  const console::Asset* asset = nullptr;  // the file, or nullptr for the error below
  ErrorCode error = ErrorCode::not_found;
  std::string message;
};

// REQUIRES: console::is_console_path(target).
ConsoleAnswer console_answer(console::Audience audience, boost::beast::http::verb method,
                             std::string_view target);

// The public listener's answer, written on `ex` (a HEAD gets the head alone). Returns false
// when the connection must close.
http::Task<bool> send_console(ClientExchange& ex, boost::beast::http::verb method,
                              std::string_view target);

}  // namespace cairva::gateway
