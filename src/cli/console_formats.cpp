#include "cli/console_formats.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>

#include "cli/printable.h"

namespace cairva::cli {
namespace json = boost::json;

namespace {

constexpr std::string_view outcome_order[] = {"booked", "already_booked", "conflict", "not_found",
                                              "not_pending"};

const std::vector<std::string>& event_columns() {
  static const std::vector<std::string> c = {
      "id",           "allocation_id", "request_id", "provider_request_id",
      "input_tokens", "output_tokens", "source",     "finality",
      "evidence",     "booked_at",     "corrects"};
  return c;
}

const std::vector<std::string>& request_columns() {
  static const std::vector<std::string> c = {"id",
                                             "allocation_id",
                                             "state",
                                             "started_at",
                                             "finished_at",
                                             "model",
                                             "stream",
                                             "hold_input_tokens",
                                             "hold_output_tokens",
                                             "provider_request_id"};
  return c;
}

// A JSON value as a CSV cell: strings as they are, null empty, the rest as JSON.
std::string cell(const json::value* v) {
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return std::string(v->get_string());
  return json::serialize(*v);
}

const json::value* member(const json::value& v, std::string_view key) {
  return v.is_object() ? v.get_object().if_contains(key) : nullptr;
}

Error at_line(size_t line, const std::string& why) {
  return make_error(ErrorCode::invalid_request, "line " + std::to_string(line) + ": " + why);
}

// RFC 4180 records: fields split on commas, quoted fields may hold commas, doubled quotes and
// line breaks. Each record with the line it starts on.
struct Record {
  size_t line = 0;
  std::vector<std::string> fields;
};

Result<std::vector<Record>> csv_records(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a spreadsheet's BOM
  std::vector<Record> out;
  Record rec{1, {}};
  std::string field;
  size_t line = 1;
  bool quoted = false, was_quoted = false, any = false;
  auto end_field = [&] {
    rec.fields.push_back(std::move(field));
    field.clear();
    was_quoted = false;
  };
  auto end_record = [&] {
    end_field();
    const bool blank = rec.fields.size() == 1 && rec.fields[0].empty();
    if (!blank) out.push_back(std::move(rec));
    rec = Record{line, {}};
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty() || was_quoted) return at_line(line, "a quote inside an unquoted field");
      quoted = was_quoted = any = true;
    } else if (c == ',') {
      end_field();
      any = true;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      continue;  // the \n ends the record
    } else if (c == '\n') {
      ++line;
      end_record();
    } else {
      if (was_quoted) return at_line(line, "text after a closing quote");
      field += c;
      any = true;
    }
  }
  if (quoted) return at_line(rec.line, "a quoted field is not closed");
  if (any || !field.empty()) end_record();
  return out;
}

Result<int64_t> count_of(std::string_view text, size_t line, std::string_view column) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return at_line(line, std::string(column) + ": expected an integer >= 0, got \"" +
                             std::string(text) + "\"");
  }
  return v;
}

// The item's own checks, the API's: exactly one id, counts integers >= 0, known fields.
Status check_item(const json::object& o, size_t line) {
  for (const auto& kv : o) {
    const std::string_view k = kv.key();
    if (k != "request_id" && k != "provider_request_id" && k != "allocation_id" &&
        k != "input_tokens" && k != "output_tokens") {
      return at_line(line, "unknown field " + std::string(k));
    }
    if ((k == "input_tokens" || k == "output_tokens") &&
        !(kv.value().is_int64() && kv.value().get_int64() >= 0)) {
      return at_line(line, std::string(k) + ": expected an integer >= 0");
    }
    if ((k == "request_id" || k == "provider_request_id" || k == "allocation_id") &&
        !(kv.value().is_string() && !kv.value().get_string().empty())) {
      return at_line(line, std::string(k) + ": expected a non-empty string");
    }
  }
  if (o.contains("request_id") == o.contains("provider_request_id")) {
    return at_line(line, "give exactly one of request_id and provider_request_id");
  }
  if (!o.contains("input_tokens") || !o.contains("output_tokens")) {
    return at_line(line, "input_tokens and output_tokens are required");
  }
  return {};
}

}  // namespace

std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_header(ExportKind kind) {
  const auto& cols = kind == ExportKind::events ? event_columns() : request_columns();
  std::string out;
  for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + cols[i];
  return out + "\r\n";
}

std::string export_line(ExportKind kind, ExportFormat format, const json::value& row) {
  if (format == ExportFormat::jsonl) return json::serialize(row) + "\n";
  std::vector<std::string> cells;
  if (kind == ExportKind::events) {
    for (const auto& c : event_columns()) cells.push_back(cell(member(row, c)));
  } else {
    for (const auto& c : request_columns()) {
      if (c == "hold_input_tokens" || c == "hold_output_tokens") {
        const json::value* hold = member(row, "hold");
        cells.push_back(
            cell(hold ? member(*hold, c == "hold_input_tokens" ? "input_tokens" : "output_tokens")
                      : nullptr));
      } else {
        cells.push_back(cell(member(row, c)));
      }
    }
  }
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
  return out + "\r\n";
}

ExportFormat guess_import_format(std::string_view path, std::string_view text) {
  if (path.ends_with(".csv")) return ExportFormat::csv;
  if (path.ends_with(".jsonl") || path.ends_with(".ndjson")) return ExportFormat::jsonl;
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{' ? ExportFormat::jsonl
                                                               : ExportFormat::csv;
}

Result<std::vector<ImportItem>> parse_reconcile_file(std::string_view text, ExportFormat format) {
  std::vector<ImportItem> out;
  if (format == ExportFormat::jsonl) {
    size_t line = 0, at = 0;
    while (at <= text.size()) {
      const size_t nl = text.find('\n', at);
      const std::string_view l =
          text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
      ++line;
      at = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
      if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      boost::system::error_code ec;
      json::value v = json::parse(l, ec);
      if (ec || !v.is_object()) return at_line(line, "expected one JSON object per line");
      if (Status s = check_item(v.get_object(), line); !s.ok()) return s.error();
      out.push_back({line, std::move(v.as_object())});
    }
    return out;
  }
  auto records = csv_records(text);
  if (!records.ok()) return records.error();
  if (records->empty()) return out;
  const std::vector<std::string>& header = records->front().fields;
  for (const auto& h : header) {
    if (h != "request_id" && h != "provider_request_id" && h != "allocation_id" &&
        h != "input_tokens" && h != "output_tokens") {
      return at_line(
          1, "unknown column \"" + h +
                 "\" (expected request_id or provider_request_id, input_tokens, output_tokens, "
                 "optionally allocation_id)");
    }
  }
  for (size_t r = 1; r < records->size(); ++r) {
    const Record& rec = (*records)[r];
    if (rec.fields.size() != header.size()) {
      return at_line(rec.line, std::to_string(rec.fields.size()) + " fields, the header has " +
                                   std::to_string(header.size()));
    }
    json::object item;
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string& v = rec.fields[c];
      if (header[c] == "input_tokens" || header[c] == "output_tokens") {
        auto n = count_of(v, rec.line, header[c]);
        if (!n.ok()) return n.error();
        item[header[c]] = *n;
      } else if (!v.empty()) {
        item[header[c]] = v;
      }
    }
    if (Status s = check_item(item, rec.line); !s.ok()) return s.error();
    out.push_back({rec.line, std::move(item)});
  }
  return out;
}

bool ImportSummary::needs_attention() const {
  auto n = [&](const char* k) {
    auto it = outcomes.find(k);
    return it == outcomes.end() ? 0 : it->second;
  };
  return n("conflict") > 0 || n("not_found") > 0;
}

void add_results(ImportSummary& summary, const std::vector<ImportItem>& items, size_t first,
                 const json::array& results) {
  for (const auto& r : results) {
    const json::value* item = member(r, "item");
    const json::value* outcome = member(r, "outcome");
    if (outcome == nullptr || !outcome->is_string()) continue;
    const std::string o(outcome->get_string());
    ++summary.outcomes[o];
    if (o == "booked" || o == "already_booked" || item == nullptr || !item->is_number()) continue;
    const size_t index = first + static_cast<size_t>(item->to_number<int64_t>());
    if (index >= items.size()) continue;
    const json::object& it = items[index].item;
    const char* by = it.contains("request_id") ? "request_id" : "provider_request_id";
    summary.notes.push_back("line " + std::to_string(items[index].line) + ": " + o + " (" + by +
                            " " + cell(it.if_contains(by)) + ")");
  }
}

std::string render_import_summary(const ImportSummary& s, bool dry_run, size_t items) {
  std::string out = dry_run ? "dry run, nothing booked: " + std::to_string(items) + " items\n"
                            : "imported " + std::to_string(items) + " items\n";
  for (auto o : outcome_order) {
    auto it = s.outcomes.find(std::string(o));
    const int64_t n = it == s.outcomes.end() ? 0 : it->second;
    out += "  " + std::string(o) + std::string(16 - o.size(), ' ') + std::to_string(n) + "\n";
  }
  for (const auto& note : s.notes) out += printable(note) + "\n";  // ids from the file and the API
  return out;
}

std::string place_in_file(const std::string& message, const std::vector<ImportItem>& items,
                          size_t first) {
  constexpr std::string_view prefix = "items[";
  const auto at = message.find(prefix);
  if (at == std::string::npos) return message;
  size_t index = 0;
  const char* begin = message.data() + at + prefix.size();
  auto [end, ec] = std::from_chars(begin, message.data() + message.size(), index);
  if (ec != std::errc() || *end != ']' || first + index >= items.size()) return message;
  return message.substr(0, at) + "line " + std::to_string(items[first + index].line) +
         message.substr(static_cast<size_t>(end + 1 - message.data()));
}

}  // namespace cairva::cli
