#include "cli/admin_commands.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>

#include "cli/printable.h"

namespace cairva::cli {
namespace json = boost::json;

namespace {

constexpr int64_t seconds_per_minute = 60;
constexpr int64_t seconds_per_hour = 60 * seconds_per_minute;
constexpr int64_t seconds_per_day = 24 * seconds_per_hour;
// A hundred years: any longer duration is a typo.
constexpr int64_t duration_s_max = int64_t{100} * 366 * seconds_per_day;

// A value as a table cell: strings bare, null as "-", numbers and others as JSON; every
// cell printable(), since each comes from a stored field.
std::string cell(const json::value* v) {
  if (v == nullptr || v->is_null()) return "-";
  if (v->is_string()) return printable(v->get_string());
  return printable(json::serialize(*v));
}

std::string field(const json::value& v, std::string_view key) {
  return cell(v.is_object() ? v.get_object().if_contains(key) : nullptr);
}

// "in/out" of a {"input_tokens","output_tokens"} object.
std::string pair(const json::value& v, std::string_view key) {
  const json::value* p = v.is_object() ? v.get_object().if_contains(key) : nullptr;
  if (p == nullptr || !p->is_object()) return "-";
  return field(*p, "input_tokens") + "/" + field(*p, "output_tokens");
}

const json::array& data_of(const json::value& list) {
  static const json::array empty;
  if (!list.is_object()) return empty;
  const json::value* d = list.get_object().if_contains("data");
  return d != nullptr && d->is_array() ? d->get_array() : empty;
}

// Left-aligned columns two spaces apart.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) { rows_.push_back(std::move(headers)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const {
    std::vector<size_t> width(rows_[0].size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size() && i < width.size(); ++i)
        width[i] = std::max(width[i], r[i].size());
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string kv_lines(const std::vector<std::pair<std::string, std::string>>& rows) {
  size_t w = 0;
  for (const auto& [k, v] : rows) w = std::max(w, k.size());
  std::string out;
  for (const auto& [k, v] : rows) out += k + ":" + std::string(w - k.size() + 1, ' ') + v + "\n";
  return out;
}

}  // namespace

std::optional<int64_t> parse_duration_s(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = seconds_per_minute;
      break;
    case 'h':
      unit = seconds_per_hour;
      break;
    case 'd':
      unit = seconds_per_day;
      break;
    default:
      return std::nullopt;
  }
  const std::string_view digits = text.substr(0, text.size() - 1);
  int64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n <= 0 ||
      n > duration_s_max / unit) {
    return std::nullopt;
  }
  return n * unit;
}

Result<std::string> agreement_body(const AgreementArgs& a, UnixMicros now) {
  if (a.ends_at.empty() == a.duration.empty()) {
    return make_error(ErrorCode::invalid_request, "give exactly one of --ends-at and --duration");
  }
  json::object o;
  o["supplier"] = a.supplier;
  o["buyer"] = a.buyer;
  o["provider"] = a.provider;
  if (!a.models.empty()) {
    json::array models;
    for (const auto& m : a.models) models.emplace_back(m);
    o["models"] = std::move(models);
  }
  if (!a.service_tiers.empty()) {
    json::array tiers;
    for (const auto& t : a.service_tiers) tiers.emplace_back(t);
    o["service_tiers"] = std::move(tiers);
  }
  o["input_tokens"] = a.input_tokens;
  o["output_tokens"] = a.output_tokens;
  if (!a.starts_at.empty()) o["starts_at"] = a.starts_at;
  if (!a.ends_at.empty()) {
    o["ends_at"] = a.ends_at;
  } else {
    auto seconds = parse_duration_s(a.duration);
    if (!seconds) {
      return make_error(
          ErrorCode::invalid_request,
          "--duration: expected a positive number and a unit s, m, h or d (e.g. 30d), got \"" +
              a.duration + "\"");
    }
    UnixMicros start = now;
    if (!a.starts_at.empty()) {
      auto parsed = parse_rfc3339(a.starts_at);
      if (!parsed) {
        return make_error(
            ErrorCode::invalid_request,
            "--starts-at: expected an RFC 3339 time such as 2026-12-01T00:00:00Z, got \"" +
                a.starts_at + "\"");
      }
      start = *parsed;
    }
    UnixMicros end = start + *seconds * micros_per_second;
    // From the local clock, the end is rounded up to a whole second: a readable time that
    // never makes the window shorter than asked.
    if (a.starts_at.empty())
      end = (end + micros_per_second - 1) / micros_per_second * micros_per_second;
    o["ends_at"] = format_rfc3339(end);
  }
  o["requests_per_minute"] = a.requests_per_minute;
  o["tokens_per_minute"] = a.tokens_per_minute;
  o["max_concurrency"] = a.max_concurrency;
  return json::serialize(o);
}

// The cells of `g`'s array member `name`, joined by commas ("" when it is not an array).
std::string joined_cells(const json::value& g, std::string_view name) {
  std::string out;
  const json::value* v = g.is_object() ? g.get_object().if_contains(name) : nullptr;
  if (v == nullptr || !v->is_array()) return out;
  // An empty json::array's begin and end are both null; the analyzer does not see them equal.
  // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
  for (const auto& x : v->get_array()) out += (out.empty() ? "" : ",") + cell(&x);
  return out;
}

std::string render_agreement(const json::value& g) {
  const std::string models = joined_cells(g, "models");
  const std::string tiers = joined_cells(g, "service_tiers");
  return kv_lines({{"agreement", field(g, "id")},
                   {"state", field(g, "state")},
                   {"supplier", field(g, "supplier")},
                   {"buyer", field(g, "buyer")},
                   {"provider", field(g, "provider")},
                   {"models", models.empty() ? "(any)" : models},
                   {"service tiers", tiers.empty() ? "(auto, default)" : "auto, default, " + tiers},
                   {"allowance in/out", field(g, "input_tokens") + "/" + field(g, "output_tokens")},
                   {"window", field(g, "starts_at") + " .. " + field(g, "ends_at")},
                   {"limits rpm/tpm/conc", field(g, "requests_per_minute") + "/" +
                                               field(g, "tokens_per_minute") + "/" +
                                               field(g, "max_concurrency")}});
}

std::string render_cancelled_agreement(const json::value& v) {
  const json::value none;
  const json::value* g = v.is_object() ? v.get_object().if_contains("agreement") : nullptr;
  return render_agreement(g ? *g : none);
}

std::string render_allocation(const json::value& a) {
  const json::value* cur = a.is_object() ? a.get_object().if_contains("current") : nullptr;
  const json::value* lim = a.is_object() ? a.get_object().if_contains("limits") : nullptr;
  const json::value* win = a.is_object() ? a.get_object().if_contains("window") : nullptr;
  const json::value none;
  const json::value& c = cur ? *cur : none;
  const json::value& l = lim ? *lim : none;
  const json::value& w = win ? *win : none;
  return kv_lines({{"allocation", field(a, "id")},
                   {"agreement", field(a, "agreement_id")},
                   {"state", field(a, "state")},
                   {"window", field(w, "starts_at") + " .. " + field(w, "ends_at")},
                   {"limits rpm/tpm/conc", field(l, "requests_per_minute") + "/" +
                                               field(l, "tokens_per_minute") + "/" +
                                               field(l, "max_concurrency")},
                   {"allowance in/out", pair(a, "allowance")},
                   {"used in/out", pair(a, "used")},
                   {"held in/out", pair(a, "held")},
                   {"remaining in/out", pair(a, "remaining")},
                   {"last minute req/tok",
                    field(c, "requests_last_minute") + "/" + field(c, "tokens_last_minute")},
                   {"in flight", field(c, "in_flight")},
                   {"usage pending", field(c, "usage_pending")}});
}

std::string render_created_agreement(const json::value& v) {
  const json::value none;
  const auto* obj = v.is_object() ? &v.get_object() : nullptr;
  const json::value* agr = obj ? obj->if_contains("agreement") : nullptr;
  const json::value* alloc = obj ? obj->if_contains("allocation") : nullptr;
  const json::value* key = obj ? obj->if_contains("api_key") : nullptr;
  return render_agreement(agr ? *agr : none) + "\n" + render_allocation(alloc ? *alloc : none) +
         "\n" +
         kv_lines({{"api key", field(key ? *key : none, "id")},
                   {"secret", field(key ? *key : none, "secret")}}) +
         "The secret is shown only now: hand it to the buyer (Authorization: Bearer <secret>).\n";
}

std::string render_allocation_list(const json::value& list) {
  Table t({"ALLOCATION", "STATE", "AGREEMENT", "USED IN/OUT", "HELD IN/OUT", "REMAINING IN/OUT",
           "IN_FLIGHT", "PENDING"});
  for (const auto& a : data_of(list)) {
    const json::value* c = a.is_object() ? a.get_object().if_contains("current") : nullptr;
    const json::value none;
    t.add({field(a, "id"), field(a, "state"), field(a, "agreement_id"), pair(a, "used"),
           pair(a, "held"), pair(a, "remaining"), field(c ? *c : none, "in_flight"),
           field(c ? *c : none, "usage_pending")});
  }
  return t.str();
}

std::string render_agreement_list(const json::value& list) {
  Table t({"AGREEMENT", "STATE", "SUPPLIER", "BUYER", "PROVIDER", "ALLOWANCE IN/OUT", "ENDS_AT"});
  for (const auto& g : data_of(list)) {
    t.add({field(g, "id"), field(g, "state"), field(g, "supplier"), field(g, "buyer"),
           field(g, "provider"), field(g, "input_tokens") + "/" + field(g, "output_tokens"),
           field(g, "ends_at")});
  }
  return t.str();
}

std::string render_key_list(const json::value& list) {
  Table t({"KEY", "ALLOCATION", "CREATED_AT", "REVOKED"});
  for (const auto& k : data_of(list)) {
    t.add({field(k, "id"), field(k, "allocation_id"), field(k, "created_at"), field(k, "revoked")});
  }
  return t.str();
}

std::string render_new_key(const json::value& v) {
  const json::value none;
  const json::value* k = v.is_object() ? v.get_object().if_contains("api_key") : nullptr;
  return kv_lines({{"api key", field(k ? *k : none, "id")},
                   {"secret", field(k ? *k : none, "secret")}}) +
         "The secret is shown only now.\n";
}

std::string render_revoked_key(const json::value& v) {
  const json::value none;
  const json::value* k = v.is_object() ? v.get_object().if_contains("api_key") : nullptr;
  return "revoked " + field(k ? *k : none, "id") + ": refused from now on\n";
}

std::string render_request_list(const json::value& list) {
  Table t(
      {"REQUEST", "ALLOCATION", "STATE", "MODEL", "STARTED", "HOLD IN/OUT", "PROVIDER_REQUEST_ID"});
  for (const auto& r : data_of(list)) {
    t.add({field(r, "id"), field(r, "allocation_id"), field(r, "state"), field(r, "model"),
           field(r, "started_at"), pair(r, "hold"), field(r, "provider_request_id")});
  }
  return t.str();
}

std::string render_event(const json::value& v) {
  const json::value none;
  const json::value* e = v.is_object() ? v.get_object().if_contains("event") : nullptr;
  const json::value& ev = e ? *e : none;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"event", field(ev, "id")},
      {"request", field(ev, "request_id")},
      {"booked in/out", field(ev, "input_tokens") + "/" + field(ev, "output_tokens")},
      {"source", field(ev, "source") + " (" + field(ev, "finality") + ")"},
      {"evidence", field(ev, "evidence")},
      {"booked at", field(ev, "booked_at")}};
  const json::value* corrects = ev.is_object() ? ev.get_object().if_contains("corrects") : nullptr;
  if (corrects != nullptr && corrects->is_string())
    rows.push_back({"corrects", field(ev, "corrects")});
  return kv_lines(rows);
}

std::string render_event_list(const json::value& list) {
  Table t({"EVENT", "ALLOCATION", "REQUEST", "IN", "OUT", "SOURCE", "FINALITY", "BOOKED_AT"});
  for (const auto& e : data_of(list)) {
    t.add({field(e, "id"), field(e, "allocation_id"), field(e, "request_id"),
           field(e, "input_tokens"), field(e, "output_tokens"), field(e, "source"),
           field(e, "finality"), field(e, "booked_at")});
  }
  return t.str();
}

std::string render_conflict_list(const json::value& list) {
  Table t({"CONFLICT", "ALLOCATION", "REQUEST", "PROVIDER_REQUEST_ID", "REPORTED IN/OUT",
           "BOOKED IN/OUT", "RECORDED_AT"});
  for (const auto& c : data_of(list)) {
    t.add({field(c, "id"), field(c, "allocation_id"), field(c, "request_id"),
           field(c, "provider_request_id"), pair(c, "reported"), pair(c, "booked"),
           field(c, "recorded_at")});
  }
  return t.str();
}

std::string render_backup(const json::value& v) {
  const json::value* b = v.is_object() ? v.get_object().if_contains("backup") : nullptr;
  if (b == nullptr) return "backup: -\n";
  return kv_lines(
      {{"backup", field(*b, "path")},
       {"bytes", field(*b, "bytes")},
       {"allocations", field(*b, "allocations")},
       {"requests", field(*b, "requests")},
       {"usage events", field(*b, "usage_events")},
       {"started at", field(*b, "started_at") + " (holds every write acknowledged before)"},
       {"finished at", field(*b, "finished_at")}});
}

std::string render_error(int status, const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  const json::value* e = !ec && v.is_object() ? v.get_object().if_contains("error") : nullptr;
  if (e != nullptr && e->is_object()) {
    return "cairva: " + std::to_string(status) + " " + field(*e, "code") + ": " +
           field(*e, "message");
  }
  return "cairva: " + std::to_string(status) + ": " + printable(body);
}

}  // namespace cairva::cli
