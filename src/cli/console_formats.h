// The pure parts of SPEC-CONSOLE's commands: export rows as CSV (RFC 4180) or JSONL, the
// reconciliation file an operator imports (CSV or JSONL), and the import's summary.
// No I/O here.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace cairva::cli {

enum class ExportKind { events, requests };
enum class ExportFormat { csv, jsonl };

// The CSV header: an event's fields in SPEC §2's order (SPEC-CONSOLE §3), then `corrects`
// (the event an adjustment corrects; empty for any other event); a request's, its hold in
// two columns.
std::string csv_header(ExportKind kind);
// One row (a usage event or request object as the admin API answers it), newline ended.
std::string export_line(ExportKind kind, ExportFormat format, const boost::json::value& row);
// One CSV field: quoted when it holds a comma, a quote, CR or LF, quotes doubled (RFC 4180).
std::string csv_field(std::string_view value);

// Items per POST /admin/v1/reconciliations the import sends: a tenth of what the API takes,
// so that one answer stays small and a batch's failure is easy to place in the file.
inline constexpr size_t reconcile_import_batch_items = 1000;
// The file an operator imports, at most this big: a month of a busy allocation's pending
// requests is far less.
inline constexpr size_t reconcile_import_bytes_max = size_t{64} << 20;

struct ImportItem {
  size_t line = 0;           // where the item starts in the file (1-based)
  boost::json::object item;  // as POST /admin/v1/reconciliations takes it
};

// CSV with a header naming request_id and/or provider_request_id, input_tokens,
// output_tokens and optionally allocation_id (each row gives exactly one of the ids); or
// JSONL, one such object per line. Blank lines are skipped. invalid_request naming the
// line for anything else; nothing is sent then.
Result<std::vector<ImportItem>> parse_reconcile_file(std::string_view text, ExportFormat format);
// The format a file is in: its extension (.csv, .jsonl, .ndjson), else its first character.
ExportFormat guess_import_format(std::string_view path, std::string_view text);

// Outcome -> count, in SPEC-CONSOLE §4's order, and the items worth a look.
struct ImportSummary {
  std::map<std::string, int64_t> outcomes;
  std::vector<std::string> notes;  // "line 5: conflict (provider_request_id chatcmpl-1)"
  bool needs_attention() const;    // any conflict or not_found
};
// Adds one batch's results (the API's "results") for `items`.
void add_results(ImportSummary& summary, const std::vector<ImportItem>& items, size_t first,
                 const boost::json::array& results);
// One line per outcome, then the notes, each printable() (they hold ids from the file).
std::string render_import_summary(const ImportSummary& s, bool dry_run, size_t items);

// "items[3]: …" of a batch starting at item `first`, as "line N: …" of the file.
std::string place_in_file(const std::string& message, const std::vector<ImportItem>& items,
                          size_t first);

}  // namespace cairva::cli
