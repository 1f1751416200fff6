// Stored strings made safe for a terminal. A stored field (a model name, an evidence note,
// an id a buyer chose) is attacker-chosen: printed raw, "\x1b[2K\r" erases the line it is on
// and a newline forges a row of `cairva requests list`. Every string the CLI prints from the
// admin API or a store goes through printable().
#pragma once

#include <string>
#include <string_view>

namespace cairva::cli {

enum class Escaping {
  // Tables and messages: C0 controls, DEL and invalid UTF-8 bytes as \xNN, C1 controls
  // (U+0080..U+009F) as \uNNNN, and a backslash as \\ so that an escape is never ambiguous.
  text,
  // A JSON document (the --json answers): C0 controls other than JSON's whitespace, DEL and
  // C1 controls as \u00NN, invalid UTF-8 bytes as \ufffd; inside a string this is the same
  // JSON value, and outside strings none of these bytes are valid JSON anyway.
  json,
};

// `text` with every terminal control written as an escape; valid UTF-8 otherwise unchanged.
std::string printable(std::string_view text, Escaping escaping = Escaping::text);

}  // namespace cairva::cli
