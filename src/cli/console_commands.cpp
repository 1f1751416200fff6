#include "cli/console_commands.h"

#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/admin_commands.h"
#include "cli/console_formats.h"
#include "cli/printable.h"

namespace cairva::cli {
namespace json = boost::json;

namespace {

// Exports are data for a file or a pipe; on a terminal their stored strings are escaped
// like every other answer the CLI prints (printable.h).
void write_out(const std::string& line) {
  static const bool terminal = isatty(STDOUT_FILENO) == 1;
  if (!terminal) {
    std::cout << line;
    return;
  }
  const size_t end = line.find_last_not_of("\r\n") + 1;  // the row's own line break stays one
  std::cout << printable(std::string_view(line).substr(0, end)) << "\n";
}

std::optional<ExportFormat> format_of(const std::string& name) {
  if (name == "csv") return ExportFormat::csv;
  if (name == "jsonl") return ExportFormat::jsonl;
  return std::nullopt;
}

int export_rows(ConsoleCommands& c, ExportKind kind) {
  const auto format = format_of(c.format);
  if (!format) {
    std::cerr << "cairva: --format: expected csv or jsonl, got \"" << printable(c.format) << "\"\n";
    return exit_bad_config;  // bad usage, as CLI11's own option checks
  }
  if (*format == ExportFormat::csv) write_out(csv_header(kind));
  const bool ok = follow_pages(
      c.hooks, c.admin, kind == ExportKind::events ? "/admin/v1/events" : "/admin/v1/requests",
      {{"allocation_id", c.allocation}, {"from", c.from}, {"to", c.to}}, std::nullopt, c.rows_max,
      [&](const json::array& rows) {
        for (const auto& r : rows) write_out(export_line(kind, *format, r));
        std::cout.flush();
      });
  return ok ? exit_ok : exit_refused;
}

void add_export(ConsoleCommands& c, CLI::App& parent, ExportKind kind) {
  const bool events = kind == ExportKind::events;
  auto* cmd = parent.add_subcommand(
      "export", events ? "Write every usage event of an allocation (adjustments included) to "
                         "stdout, booking order"
                       : "Write every request of an allocation to stdout, start order");
  cmd->add_option("--allocation", c.allocation, "Allocation id (alloc_...)")->required();
  cmd->add_option(
      "--from", c.from,
      std::string("Only ") + (events ? "booked" : "started") + " at or after this RFC 3339 time");
  cmd->add_option(
      "--to", c.to,
      std::string("Only ") + (events ? "booked" : "started") + " before this RFC 3339 time");
  cmd->add_option("--format", c.format, "csv (RFC 4180, header row) or jsonl (one object a line)")
      ->capture_default_str();
  cmd->add_option("--limit", c.rows_max, "At most this many (default: all)")
      ->check(CLI::PositiveNumber);
  add_admin_options(cmd, c.admin);
  cmd->callback([&c, kind] { c.action = [&c, kind] { return export_rows(c, kind); }; });
}

// Sends every batch of `items` once; nullopt after an API error (printed, placed in the file).
std::optional<ImportSummary> send_batches(ConsoleCommands& c, const std::vector<ImportItem>& items,
                                          bool dry_run) {
  ImportSummary summary;
  for (size_t first = 0; first < items.size(); first += reconcile_import_batch_items) {
    const size_t n = std::min(reconcile_import_batch_items, items.size() - first);
    json::array batch;
    for (size_t i = first; i < first + n; ++i) batch.push_back(items[i].item);
    json::object body{{"evidence", c.evidence}, {"dry_run", dry_run}, {"items", std::move(batch)}};
    if (c.force) body["force"] = true;
    if (!c.allocation.empty()) body["allocation_id"] = c.allocation;
    // A batch's 400 names items[k]: say which line of the file that is.
    Hooks hooks = c.hooks;
    const auto send = hooks.admin_http;
    hooks.admin_http = [&, send](const std::string& url, const std::string& token,
                                 const HttpCall& call) {
      auto reply = send ? send(url, token, call) : admin_http(url, token, call);
      if (reply.ok() && reply->status == 400) {
        boost::system::error_code ec;
        json::value v = json::parse(reply->body, ec);
        json::value* e = !ec && v.is_object() ? v.get_object().if_contains("error") : nullptr;
        json::value* m =
            e != nullptr && e->is_object() ? e->get_object().if_contains("message") : nullptr;
        if (m != nullptr && m->is_string()) {
          *m = place_in_file(std::string(m->get_string()), items, first);
          reply->body = json::serialize(v);
        }
      }
      return reply;
    };
    auto answer = admin_json(
        hooks, c.admin, HttpCall{"POST", admin_target({"reconciliations"}), json::serialize(body)});
    if (!answer) return std::nullopt;
    const json::value* results =
        answer->is_object() ? answer->get_object().if_contains("results") : nullptr;
    if (results == nullptr || !results->is_array()) {
      std::cerr << "cairva: the admin API answered without results\n";
      return std::nullopt;
    }
    add_results(summary, items, first, results->get_array());
  }
  return summary;
}

int import_file(ConsoleCommands& c) {
  std::ifstream in(c.file, std::ios::binary);
  if (!in) {
    std::cerr << "cairva: cannot read " << printable(c.file) << "\n";
    return exit_refused;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > reconcile_import_bytes_max) {
    std::cerr << "cairva: " << printable(c.file) << " is larger than "
              << (reconcile_import_bytes_max >> 20) << " MiB: split it\n";
    return exit_refused;
  }
  const auto format =
      c.format.empty() ? guess_import_format(c.file, text.str()) : format_of(c.format);
  if (!format) {
    std::cerr << "cairva: --format: expected csv or jsonl, got \"" << printable(c.format) << "\"\n";
    return exit_bad_config;  // bad usage, as CLI11's own option checks
  }
  auto items = parse_reconcile_file(text.str(), *format);
  if (!items) {
    std::cerr << "cairva: " << printable(c.file) << ": " << printable(items.error().message)
              << " (nothing sent)\n";
    return exit_refused;
  }
  // Every batch as a dry run first: an item the API refuses (malformed, or above the hold
  // ratio without --force) stops the import before anything of the file is booked.
  auto checked = send_batches(c, *items, true);
  if (!checked) {
    std::cerr << "cairva: nothing of " << printable(c.file) << " was booked\n";
    return exit_refused;
  }
  if (c.dry_run) {
    std::cout << render_import_summary(*checked, true, items->size());
    return checked->needs_attention() ? exit_refused : exit_ok;
  }
  auto done = send_batches(c, *items, false);
  if (!done) return exit_refused;
  std::cout << render_import_summary(*done, false, items->size());
  return done->needs_attention() ? exit_refused : exit_ok;
}

}  // namespace

void add_console_commands(ConsoleCommands& c) {
  auto* ag_list = c.agreement.add_subcommand("list", "List every agreement (every page)");
  ag_list->add_option("--limit", c.rows_max, "At most this many (default: all)")
      ->check(CLI::PositiveNumber);
  add_admin_options(ag_list, c.admin);
  ag_list->callback([&c] {
    c.action = [&c] {
      return admin_list(c.hooks, c.admin, "/admin/v1/agreements", {}, std::nullopt, c.rows_max,
                        render_agreement_list);
    };
  });

  auto* key_list = c.key.add_subcommand(
      "list", "List an allocation's keys: id, created, revoked (never a secret)");
  key_list->add_option("ALLOCATION", c.id, "Allocation id (alloc_...)")->required();
  key_list->add_option("--limit", c.rows_max, "At most this many (default: all)")
      ->check(CLI::PositiveNumber);
  add_admin_options(key_list, c.admin);
  key_list->callback([&c] {
    c.action = [&c] {
      return admin_list(c.hooks, c.admin, admin_target({"allocations", c.id, "keys"}), {},
                        std::nullopt, c.rows_max, render_key_list);
    };
  });

  add_export(c, c.events, ExportKind::events);
  add_export(c, c.requests, ExportKind::requests);
  c.events.require_subcommand(0, 1);

  auto* import = c.reconcile.add_subcommand(
      "import",
      "Book usage_pending requests from a provider's metering export: CSV (header request_id or "
      "provider_request_id, input_tokens, output_tokens[, allocation_id]) or JSONL; prints a "
      "summary per outcome, "
      "exits 1 on any conflict or not_found");
  import->add_option("FILE", c.file, "The export (.csv, .jsonl)")->required();
  import
      ->add_option("--evidence", c.evidence, "Where the counts come from (kept with each booking)")
      ->required();
  import->add_flag("--dry-run", c.dry_run, "Show what would be booked; book nothing");
  import->add_flag("--force", c.force,
                   "Book counts above 10x a request's hold (reconcile_hold_ratio_max)");
  import->add_option("--allocation", c.allocation,
                     "Look provider_request_ids up in this allocation only");
  import->add_option("--format", c.format,
                     "csv or jsonl (default: from the file's extension or first character)");
  add_admin_options(import, c.admin);
  import->callback([&c] {
    c.action = [&c] { return import_file(c);
};
}  // namespace cairva::cli
);
// `--format` defaults to csv for exports; an import guesses unless told.
  import->preparse_callback([&c](size_t) { c.format.clear();
  });
  c.reconcile.require_subcommand(0, 1);

  auto* adjust = c.app.add_subcommand("adjust",
                                      "Correct a booked event with an adjustment event (signed "
                                      "counts, evidence); nothing is edited");
  adjust->add_option("EVENT", c.id, "The event to correct (evt_...)")->required();
  adjust->add_option("--input", c.input, "Input tokens to add (negative to take back)");
  adjust->add_option("--output", c.output, "Output tokens to add (negative to take back)");
  adjust->add_option("--evidence", c.evidence, "Why (kept with the adjustment)")->required();
  add_admin_options(adjust, c.admin);
  adjust->callback([&c] {
    c.action = [&c] {
      json::object body{
          {"input_tokens", c.input}, {"output_tokens", c.output}, {"evidence", c.evidence}};
      return admin_call(
          c.hooks, c.admin,
          HttpCall{"POST", admin_target({"events", c.id, "adjust"}), json::serialize(body)},
          render_event);
    };
  });
  }

  }  // namespace cairva::cli
