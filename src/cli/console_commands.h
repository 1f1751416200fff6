// SPEC-CONSOLE's commands, added to the command line by cli.cpp:
//   cairva agreement list, cairva key list ALLOCATION    (every page; --limit N stops early)
//   cairva events export / cairva requests export         (CSV or JSONL on stdout)
//   cairva reconcile import FILE --evidence TEXT           (bulk reconciliation)
//   cairva adjust EVENT --input ±N --output ±N --evidence TEXT
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cli/admin_call.h"

namespace cairva::cli {

// The parent commands they join, and what their options are read into (kept for the whole
// run: the actions run after parsing).
struct ConsoleCommands {
  CLI::App& app;
  const Hooks& hooks;
  AdminOptions& admin;
  std::function<int()>& action;
  CLI::App& agreement;
  CLI::App& key;
  CLI::App& requests;
  CLI::App& events;
  CLI::App& reconcile;

  std::string id, allocation, from, to, format = "csv", evidence, file;
  std::optional<size_t> rows_max;
  int64_t input = 0, output = 0;
  bool dry_run = false, force = false;
};

void add_console_commands(ConsoleCommands& c);

}  // namespace cairva::cli
