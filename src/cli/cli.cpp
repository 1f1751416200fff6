#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/url.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/admin_call.h"
#include "cli/admin_commands.h"
#include "cli/console_commands.h"
#include "cli/printable.h"

namespace cairva::cli {
namespace {

namespace json = boost::json;

constexpr const char* description =
    "Cairva: an OpenAI-compatible gateway that sells LLM capacity exactly.\n"
    "Run `cairva serve` for the gateway; the other commands talk to its admin API.";

constexpr const char* footer =
    "Admin commands reach the admin API at --admin-url (env CAIRVA_ADMIN_URL, default\n"
    "http://127.0.0.1:8081; https:// is verified against the system's CAs or OpenSSL's\n"
    "SSL_CERT_FILE) with the token in env CAIRVA_ADMIN_TOKEN. Examples:\n"
    "  cairva serve --config cairva.toml\n"
    "  cairva agreement create --supplier acme --buyer bob --provider openai \\\n"
    "      --input-tokens 5000000 --output-tokens 1000000 --duration 30d \\\n"
    "      --rpm 600 --tpm 200000 --concurrency 8\n"
    "  cairva allocation list\n"
    "  cairva requests pending\n"
    "  cairva reconcile req_... --input 1200 --output 340 --evidence \"provider export "
    "2026-11-30\"\n"
    "  cairva reconcile req_... --reported --evidence \"the provider's report, kept by the "
    "gateway\"\n"
    "  cairva backup --to /var/lib/cairva/backup/cairva-$(date +%F).db\n"
    "  cairva reconcile import metering.csv --evidence \"provider export 2026-11-30\" --dry-run\n"
    "  cairva adjust evt_... --input -1200 --output 0 --evidence \"credit note 17\"\n"
    "  cairva events export --allocation alloc_... --from 2026-11-01T00:00:00Z > events.csv\n"
    "List commands follow every page of the admin API (--limit N stops after N rows).\n"
    "Run `cairva COMMAND --help` for a command's options.";

Result<config::Config> load_config(const std::string& path,
                                   const config::LoadOptions& options = {}) {
  if (path.empty()) return config::default_config();
  return config::load_config_file(path, options);
}

struct ServeArgs {
  std::string config, listen, admin_listen, store;
};

// Loads the config and applies the command-line overrides, each validated like its key.
Result<config::Config> serve_config(const ServeArgs& a, const config::LoadOptions& options = {}) {
  auto cfg = load_config(a.config, options);
  if (!cfg) return cfg;
  if (!a.listen.empty()) {
    if (!config::valid_listen_address(a.listen)) {
      return make_error(ErrorCode::invalid_request,
                        "--listen: expected HOST:PORT, got \"" + a.listen + "\"");
    }
    cfg->listen = a.listen;
  }
  if (!a.admin_listen.empty()) {
    if (!config::valid_listen_address(a.admin_listen)) {
      return make_error(ErrorCode::invalid_request,
                        "--admin-listen: expected HOST:PORT, got \"" + a.admin_listen + "\"");
    }
    cfg->admin_listen = a.admin_listen;
  }
  if (!a.store.empty()) {
    if (!config::valid_store_url(a.store)) {
      return make_error(
          ErrorCode::invalid_request,
          "--store: expected sqlite://PATH or postgresql://..., got \"" + a.store + "\"");
    }
    cfg->store_url = a.store;
  }
  return cfg;
}

// The CLI usually runs beside the gateway: a relative path means the operator's working
// directory, not the gateway's. An empty one stays empty (the API names the problem).
std::string absolute_path(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.string();
}

int not_built(const char* what) {
  std::cerr << "cairva: " << what << " is not built into this binary yet\n";
  return exit_refused;
}

int print_audit(const store::AuditReport& r) {
  std::cout << "audit: " << r.allocations << " allocations, " << r.requests << " requests, "
            << r.events << " usage events\n";
  if (r.unapplied_writes > 0) {
    std::cout << "note: " << r.unapplied_writes
              << " acknowledged write(s) are still only in the operation log; the tables"
                 " audited lack them and the next `cairva serve` applies them\n";
  }
  if (r.violations.empty()) {
    std::cout << "ok: no violation of the ledger's invariants\n";
    return exit_ok;
  }
  for (const auto& v : r.violations) std::cout << "violation: " << printable(v) << "\n";
  std::cout << r.violations.size() << " violation(s)\n";
  return exit_refused;
}

}  // namespace

store::StoreOptions store_options(const config::Config& c) {
  store::StoreOptions o;
  o.url = c.store_url;
  o.sync_full = c.store_sync_full;
  o.pool_size = c.pool_size;
  o.in_flight_timeout_s = c.in_flight_timeout_s;
  for (const auto& p : c.providers) o.providers.push_back(p.name);
  return o;
}

int run(int argc, char** argv, const Hooks& hooks) {
  CLI::App app{description, "cairva"};
  app.require_subcommand(1);
  app.footer(footer);
  if (!hooks.version.empty())
    app.set_version_flag("--version", hooks.version,
                         "Print the version, commit and schema versions");
  std::function<int()> action;

  // --- serve, mock-provider, audit ---
  ServeArgs serve;
  auto* serve_cmd = app.add_subcommand("serve", "Run the gateway (public API and admin API)");
  serve_cmd->add_option("--config", serve.config,
                        "TOML config file (default: built-in defaults, store ./cairva.db)");
  serve_cmd->add_option("--listen", serve.listen,
                        "Public API address HOST:PORT (overrides server.listen)");
  serve_cmd->add_option("--admin-listen", serve.admin_listen,
                        "Admin API address HOST:PORT (overrides server.admin_listen)");
  serve_cmd->add_option("--store", serve.store,
                        "sqlite://PATH or postgresql://... (overrides store.url)");
  serve_cmd->callback([&] {
    action = [&] {
      auto cfg = serve_config(serve);
      if (!cfg) {
        std::cerr << printable(cfg.error().message) << "\n";
        return exit_bad_config;
      }
      return hooks.serve ? hooks.serve(*cfg) : not_built("serve");
    };
  });

  std::string mock_listen = mock_provider_listen_default;
  auto* mock_cmd =
      app.add_subcommand("mock-provider", "Run the built-in OpenAI-compatible fake provider");
  mock_cmd->add_option("--listen", mock_listen, "Address HOST:PORT")->capture_default_str();
  int mock_threads = 1;
  mock_cmd->add_option("--threads", mock_threads, "Event loops (one per core at most)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  mock_cmd->callback([&] {
    action = [&] {
      if (!config::valid_listen_address(mock_listen)) {
        std::cerr << "cairva: --listen: expected HOST:PORT, got \"" << mock_listen << "\"\n";
        return exit_bad_config;
      }
      return hooks.mock_provider ? hooks.mock_provider(mock_listen, mock_threads)
                                 : not_built("mock-provider");
    };
  });

  ServeArgs audit;
  auto* audit_cmd = app.add_subcommand(
      "audit", "Check a store's ledger invariants; non-zero exit on any violation");
  audit_cmd->add_option("--config", audit.config, "TOML config file naming the store");
  audit_cmd->add_option("--store", audit.store,
                        "sqlite://PATH or postgresql://... (overrides store.url)");
  audit_cmd->callback([&] {
    action = [&] {
      // The audit reads the store only: it needs no provider key in its environment.
      auto cfg = serve_config(audit, config::LoadOptions{.require_provider_keys = false});
      if (!cfg) {
        std::cerr << printable(cfg.error().message) << "\n";
        return exit_bad_config;
      }
      if (!hooks.audit) return not_built("audit");
      auto report = hooks.audit(*cfg);
      if (!report) {
        std::cerr << "cairva: audit: " << printable(report.error().message) << "\n";
        return exit_refused;
      }
      return print_audit(*report);
    };
  });

  // --- admin commands ---
  AdminOptions admin;
  auto admin_action = [&](const std::function<HttpCall()>& make, Renderer render) {
    return [&, make, render] {
      action = [&, make, render] { return admin_call(hooks, admin, make(), render); };
    };
  };

  auto* agreement = app.add_subcommand("agreement", "Create, show or cancel agreements");
  agreement->require_subcommand(1);
  AgreementArgs ag;
  UnixMicros now = SystemClock().now();
  auto* ag_create = agreement->add_subcommand(
      "create",
      "Create an agreement, its allocation and a first API key (its secret is printed once)");
  ag_create->add_option("--supplier", ag.supplier, "Who sells the capacity")->required();
  ag_create->add_option("--buyer", ag.buyer, "Who buys it")->required();
  ag_create
      ->add_option("--provider", ag.provider, "A provider name from the config's [[providers]]")
      ->required();
  ag_create->add_option("--models", ag.models, "Allowed models, comma-separated (default: any)")
      ->delimiter(',');
  ag_create
      ->add_option("--service-tier", ag.service_tiers,
                   "A service_tier allowed beyond auto and default (e.g. priority); repeat it or "
                   "give a comma-separated list (default: none)")
      ->delimiter(',');
  ag_create->add_option("--input-tokens", ag.input_tokens, "Input token allowance")->required();
  ag_create->add_option("--output-tokens", ag.output_tokens, "Output token allowance")->required();
  ag_create->add_option("--starts-at", ag.starts_at, "Window start, RFC 3339 (default: now)");
  auto* ends = ag_create->add_option("--ends-at", ag.ends_at, "Window end, RFC 3339");
  auto* dur = ag_create->add_option("--duration", ag.duration,
                                    "Window length instead of --ends-at: 30d, 12h, 90m, 45s");
  ends->excludes(dur);
  ag_create->add_option("--rpm", ag.requests_per_minute, "requests_per_minute limit")->required();
  ag_create->add_option("--tpm", ag.tokens_per_minute, "tokens_per_minute limit (booked tokens)")
      ->required();
  ag_create->add_option("--concurrency", ag.max_concurrency, "max_concurrency limit")->required();
  add_admin_options(ag_create, admin);
  ag_create->callback([&] {
    action = [&] {
      auto body = agreement_body(ag, now);
      if (!body) {
        std::cerr << "cairva: " << printable(body.error().message) << "\n";
        return exit_refused;
      }
      return admin_call(hooks, admin, HttpCall{"POST", admin_target({"agreements"}), *body},
                        render_created_agreement);
    };
  });
  std::string id;
  auto* ag_show = agreement->add_subcommand("show", "Show one agreement");
  ag_show->add_option("ID", id, "Agreement id (agr_...)")->required();
  add_admin_options(ag_show, admin);
  ag_show->callback(admin_action(
      [&] {
        return HttpCall{"GET", admin_target({"agreements", id}), ""};
      },
      render_agreement));
  auto* ag_cancel = agreement->add_subcommand(
      "cancel",
      "Cancel an agreement: its allocation is refused from now on; in-flight requests settle");
  ag_cancel->add_option("ID", id, "Agreement id (agr_...)")->required();
  add_admin_options(ag_cancel, admin);
  ag_cancel->callback(admin_action(
      [&] {
        return HttpCall{"POST", admin_target({"agreements", id, "cancel"}), ""};
      },
      render_cancelled_agreement));

  auto* allocation = app.add_subcommand("allocation", "List, show, suspend or resume allocations");
  allocation->require_subcommand(1);
  std::optional<size_t> rows_max;  // --limit: stop after this many rows (default: every page)
  std::string al_state, al_supplier, al_buyer;  // allocation list's filters (empty: any)
  auto* al_list =
      allocation->add_subcommand("list", "List every allocation with its usage (every page)");
  al_list->add_option("--state", al_state,
                      "Only this state: ready, active, suspended, depleted, expired or cancelled");
  al_list->add_option("--supplier", al_supplier, "Only this supplier's (exact)");
  al_list->add_option("--buyer", al_buyer, "Only this buyer's (exact)");
  al_list->add_option("--limit", rows_max, "At most this many (default: all)")
      ->check(CLI::PositiveNumber);
  add_admin_options(al_list, admin);
  al_list->callback([&] {
    action = [&] {
      return admin_list(hooks, admin, "/admin/v1/allocations",
                        {{"state", al_state}, {"supplier", al_supplier}, {"buyer", al_buyer}},
                        std::nullopt, rows_max, render_allocation_list);
    };
  });
  for (const char* verb : {"show", "suspend", "resume"}) {
    const std::string v = verb;
    auto* cmd = allocation->add_subcommand(
        v, v == "show"
               ? "Show one allocation: window, limits, used, held, remaining, current load"
               : (v == "suspend" ? "Suspend an allocation: its requests are refused until resumed"
                                 : "Resume a suspended allocation"));
    cmd->add_option("ID", id, "Allocation id (alloc_...)")->required();
    add_admin_options(cmd, admin);
    cmd->callback(admin_action(
        [&, v] {
          return v == "show" ? HttpCall{"GET", admin_target({"allocations", id}), ""}
                             : HttpCall{"POST", admin_target({"allocations", id, v}), ""};
        },
        render_allocation));
  }

  auto* key = app.add_subcommand("key", "Create or revoke API keys");
  key->require_subcommand(1);
  auto* key_create = key->add_subcommand(
      "create", "Create another API key for an allocation (secret printed once)");
  key_create->add_option("ALLOCATION", id, "Allocation id (alloc_...)")->required();
  add_admin_options(key_create, admin);
  key_create->callback(admin_action(
      [&] {
        return HttpCall{"POST", admin_target({"allocations", id, "keys"}), ""};
      },
      render_new_key));
  auto* key_revoke =
      key->add_subcommand("revoke", "Revoke an API key: refused at once from then on");
  key_revoke->add_option("KEY", id, "Key id (key_...)")->required();
  add_admin_options(key_revoke, admin);
  key_revoke->callback(admin_action(
      [&] {
        return HttpCall{"DELETE", admin_target({"keys", id}), ""};
      },
      render_revoked_key));

  std::string alloc_filter, state_filter, after;
  auto* requests = app.add_subcommand("requests", "List or export requests");
  requests->require_subcommand(1);
  auto* pending = requests->add_subcommand(
      "pending", "Requests waiting for reconciliation (usage_pending), every page");
  pending->add_option("--allocation", alloc_filter, "Only this allocation");
  pending->add_option("--limit", rows_max, "At most this many (default: all)")
      ->check(CLI::PositiveNumber);
  add_admin_options(pending, admin);
  pending->callback([&] {
    action = [&] {
      return admin_list(hooks, admin, "/admin/v1/requests",
                        {{"allocation_id", alloc_filter}, {"state", "usage_pending"}}, std::nullopt,
                        rows_max, render_request_list);
    };
  });
  auto* req_list = requests->add_subcommand("list", "Requests in any state, every page");
  req_list->add_option("--allocation", alloc_filter, "Only this allocation");
  req_list->add_option("--state", state_filter, "in_flight, booked, usage_pending or failed");
  req_list->add_option("--limit", rows_max, "At most this many (default: all)")
      ->check(CLI::PositiveNumber);
  add_admin_options(req_list, admin);
  req_list->callback([&] {
    action = [&] {
      return admin_list(hooks, admin, "/admin/v1/requests",
                        {{"allocation_id", alloc_filter}, {"state", state_filter}}, std::nullopt,
                        rows_max, render_request_list);
    };
  });

  int64_t rec_input = -1, rec_output = -1;
  bool rec_reported = false;
  std::string evidence;
  auto* reconcile = app.add_subcommand(
      "reconcile",
      "Book the real counts of a usage_pending request, with written evidence (or import a file)");
  // Not required here: `cairva reconcile import FILE` names none.
  reconcile->add_option("REQUEST", id, "Request id (req_...)");
  bool rec_force = false;
  reconcile->add_flag("--force", rec_force,
                      "Book counts above 10x the request's hold (reconcile_hold_ratio_max)");
  auto* rec_in = reconcile->add_option("--input", rec_input, "Input tokens the provider metered");
  auto* rec_out =
      reconcile->add_option("--output", rec_output, "Output tokens the provider metered");
  auto* rec_rep = reconcile->add_flag(
      "--reported", rec_reported,
      "Book the counts the provider reported, kept on the request (reported_usage)");
  rec_rep->excludes(rec_in)->excludes(rec_out);
  rec_in->needs(rec_out);
  rec_out->needs(rec_in);
  // Required, but checked in the action: `reconcile import` takes its own.
  reconcile->add_option("--evidence", evidence,
                        "Where the counts come from (kept with the booking; required)");
  add_admin_options(reconcile, admin);
  reconcile->callback([&] {
    if (!reconcile->get_subcommands().empty()) return;  // `reconcile import` set its own action
    action = [&] {
      if (id.empty()) {
        std::cerr << "cairva: reconcile: give a request id (or `cairva reconcile import FILE`)\n";
        return exit_refused;
      }
      if (evidence.empty()) {
        std::cerr << "cairva: reconcile: --evidence is required\n";
        return exit_refused;
      }
      json::object body{{"evidence", evidence}};
      if (rec_force) body["force"] = true;
      if (rec_reported) {
        body["use_reported"] = true;
      } else if (rec_in->count() == 0) {
        std::cerr << "cairva: reconcile: give --input and --output, or --reported\n";
        return exit_refused;
      } else {
        body["input_tokens"] = rec_input;
        body["output_tokens"] = rec_output;
      }
      return admin_call(
          hooks, admin,
          HttpCall{"POST", admin_target({"requests", id, "reconcile"}), json::serialize(body)},
          render_event);
    };
  });

  auto* events = app.add_subcommand(
      "events", "List usage events in booking order, every page (or `events export`)");
  events->add_option("--allocation", alloc_filter, "Only this allocation");
  events->add_option("--after", after, "Only events after this event id (exclusive)");
  events->add_option("--limit", rows_max, "At most this many (default: all)")
      ->check(CLI::PositiveNumber);
  add_admin_options(events, admin);
  events->callback([&] {
    if (!events->get_subcommands().empty()) return;  // `events export` set its own action
    action = [&] {
      return admin_list(hooks, admin, "/admin/v1/events", {{"allocation_id", alloc_filter}},
                        after.empty() ? std::nullopt : std::optional<std::string>(after), rows_max,
                        render_event_list);
    };
  });

  auto* conflicts = app.add_subcommand(
      "conflicts",
      "Provider reports (or imports) that repeated a booked provider request id with other counts");
  conflicts->add_option("--allocation", alloc_filter, "Only this allocation");
  conflicts->add_option("--limit", rows_max, "At most this many (default: all)")
      ->check(CLI::PositiveNumber);
  add_admin_options(conflicts, admin);
  conflicts->callback([&] {
    action = [&] {
      return admin_list(hooks, admin, "/admin/v1/conflicts", {{"allocation_id", alloc_filter}},
                        std::nullopt, rows_max, render_conflict_list);
    };
  });

  // SPEC-CONSOLE's commands: lists of agreements and keys, exports, bulk reconciliation,
  // adjustments (console_commands.cpp).
  ConsoleCommands console{app,  hooks,     admin,   action,    *agreement,
                          *key, *requests, *events, *reconcile};
  add_console_commands(console);

  // Its own options: a copy of a large store takes longer than other admin calls.
  AdminOptions backup_admin{.timeout_s = backup_call_timeout_s};
  std::string backup_to;
  auto* backup = app.add_subcommand(
      "backup",
      "Copy the gateway's embedded store, online and consistent, into a new file on its machine");
  backup
      ->add_option("--to", backup_to,
                   "The new file (mode 0600; never replaces one). A path on the gateway's machine: "
                   "a relative one is made absolute here")
      ->required();
  add_admin_options(backup, backup_admin);
  backup->callback([&] {
    action = [&] {
      const std::string path = absolute_path(backup_to);
      return admin_call(
          hooks, backup_admin,
          HttpCall{"POST", admin_target({"backup"}), json::serialize(json::object{{"path", path}})},
          render_backup);
    };
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end here too, with 0; every other code of CLI11's is bad usage.
    return app.exit(e) == exit_ok ? exit_ok : exit_bad_config;
  }
  CAIRVA_ASSERT(action != nullptr);
  try {
    return action();
  } catch (const std::exception& e) {
    // Library exceptions (JSON shapes, allocation) end here as one line, not a crash.
    std::cerr << "cairva: " << printable(e.what()) << "\n";
    return exit_refused;
  }
}

}  // namespace cairva::cli
