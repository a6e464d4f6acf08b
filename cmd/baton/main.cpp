// The one `baton` binary: `node`, `migrate`, `worker`, `ctl`, `cron` and `doctor`. This is the only place that chooses
// real implementations (PostgreSQL) for the ports the libraries define.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "baton/base/log.h"
#include "baton/ctl/ctl.h"
#include "baton/leader_core/cron_command.h"
#include "baton/node/node.h"
#include "baton/node/node_config.h"
#include "baton/protocol/messages.h"
#include "baton/store_pg/migrate.h"
#include "baton/store_pg/pg_admin_store.h"
#include "baton/store_pg/pg_leader_store.h"
#include "baton/store_pg/pg_lease_store.h"
#include "baton/store_pg/pg_run_store.h"
#include "baton/store_pg/pg_session.h"
#include "baton/store_pg/pg_verify_store.h"
#include "baton/store_pg/pg_webhook_outbox.h"
#include "baton/store_pg/session_check.h"
#include "baton/worker/agent.h"
#include "baton/worker/worker_config.h"
#include "doctor.h"
#include "flag_value.h"
#include "verify_command.h"

namespace {

std::atomic<bool> stop_requested{false};
extern "C" void on_signal(int) { stop_requested.store(true); }
// A worker's first SIGTERM or SIGINT drains it; a second one stops it now.
std::atomic<bool> drain_requested{false};
extern "C" void on_worker_signal(int) {
  if (drain_requested.exchange(true)) stop_requested.store(true);
}

constexpr const char* usage =
    "usage: baton <command> [options]\n"
    "\n"
    "commands:\n"
    "  node --config FILE      run a coordinator node\n"
    "  migrate --config FILE   apply schema migrations and exit; --database-url URL instead of the\n"
    "                          config's (the owner's), --grant-to ROLE then gives ROLE a node's rights,\n"
    "                          --grant-submit-to ROLE an application's (baton.trigger and the like)\n"
    "  worker --config FILE    run a worker agent\n"
    "  ctl VERB ...            the admin API from the command line (baton ctl --help)\n"
    "  cron next EXPR ...      the next fire times of a cron expression (baton cron --help)\n"
    "  doctor --config FILE    check a node's or a worker's config, files, certificates and database,\n"
    "                          each problem with how to fix it (exit 1 if anything fails)\n"
    "  verify --config FILE    check the runs that finished against the history checker's invariants\n"
    "                          (exit 1 on a violation; baton verify --help)\n"
    "  --version               the version of this binary and the worker protocol versions it speaks\n";

/// Each command's own usage, for `baton COMMAND --help` (exit 0).
const std::map<std::string, std::string>& command_usage() {
  static const std::map<std::string, std::string> usage_of{
      {"node",
       "usage: baton node --config FILE\n"
       "\n"
       "Runs a coordinator node: leader election, the worker WebSocket endpoint and the\n"
       "HTTP admin API on one port, and while leading, the control loop. FILE is a node\n"
       "config (configs/node.yaml documents every key; docs/operations.md, \"Configuration\").\n"
       "SIGTERM or SIGINT hands leadership over and stops.\n"},
      {"worker",
       "usage: baton worker --config FILE\n"
       "\n"
       "Runs a worker agent: attaches to the coordinators FILE names and runs the tasks\n"
       "it is given (configs/worker.yaml; docs/operations.md, \"Worker configuration\").\n"
       "The first SIGTERM or SIGINT drains it (no new runs, the running ones finish);\n"
       "a second one stops it now.\n"},
      {"migrate",
       "usage: baton migrate --config FILE\n"
       "       baton migrate --database-url URL [--grant-to ROLE] [--grant-submit-to ROLE\n"
       "                     [--jobs NAME,...] [--events KIND,...] [--per-second N]\n"
       "                     [--max-scheduled N] [--max-bytes N]]\n"
       "\n"
       "Applies the schema migrations the binary carries and exits. --database-url: as\n"
       "the database's owner instead of the config's URL; --grant-to ROLE gives ROLE a\n"
       "node's row rights only; --grant-submit-to ROLE gives ROLE EXECUTE on baton.trigger,\n"
       "baton.emit_event and baton.submission and nothing else, for the jobs and event\n"
       "kinds named (default: all), within its budgets: submissions and events a second\n"
       "(default 200), runs scheduled more than a minute ahead (10000), bytes of one\n"
       "submission's parameters or one event's payload (65536). A grant replaces the\n"
       "role's earlier one (docs/operations.md, docs/clients.md).\n"},
      {"doctor",
       "usage: baton doctor --config FILE\n"
       "\n"
       "Checks a node's or a worker's config, the files it names, its certificates and its\n"
       "database, each problem with how to fix it; exit 1 if anything fails.\n"},
      {"verify", baton::verify_command::usage},
  };
  return usage_of;
}

/// `--help` or `-h` among a command's arguments.
bool asks_for_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
}

int fail(const std::string& message, int code = 2) {
  std::cerr << "baton: " << message;
  if (message.empty() || message.back() != '\n') std::cerr << '\n';
  return code;
}

/// Parses `--config FILE` (also `--config=FILE`); nothing else is accepted.
bool parse_config_flag(const std::vector<std::string>& args, std::string& file, std::string& error) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) {
      file = args[++i];
    } else if (args[i].rfind("--config=", 0) == 0) {
      file = args[i].substr(9);
    } else {
      error = "unexpected argument '" + args[i] + "'";
      return false;
    }
  }
  if (file.empty()) error = "--config FILE is required";
  return !file.empty();
}

/// Applies migrations, retrying while the database is unreachable for up to
/// `timeout`; a clear error naming the address and the reason otherwise.
baton::Result<baton::store::pg::MigrateReport> migrate_with_retry(const std::string& url, const std::string& by,
                                                                  baton::Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto r = baton::store::pg::migrate(url, by);
    if (r || r.error().code != baton::Errc::db_unavailable || std::chrono::steady_clock::now() >= deadline ||
        stop_requested.load())
      return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

/// baton migrate [--config FILE] [--database-url URL] [--grant-to ROLE]:
/// the URL overrides the config's (the owner's, when the nodes run as a
/// role of their own); --grant-to then gives that role a node's rights
/// (docs/operations.md, "A runtime role apart from the owner").
int cmd_migrate(const std::vector<std::string>& args) {
  std::string file, url, grantee, submitter, jobs, events, per_second, max_scheduled, max_bytes;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag, std::string& into) {
      return baton::cmd::flag_value(args, i, flag, into);
    };
    if (!value("--config", file) && !value("--database-url", url) && !value("--grant-to", grantee) &&
        !value("--grant-submit-to", submitter) && !value("--jobs", jobs) && !value("--events", events) &&
        !value("--per-second", per_second) && !value("--max-scheduled", max_scheduled) &&
        !value("--max-bytes", max_bytes))
      return fail("migrate: unexpected argument '" + a.substr(0, 64) + "'\n" + usage);
  }
  baton::store::pg::SubmitterScope scope;
  if (submitter.empty() &&
      !(jobs.empty() && events.empty() && per_second.empty() && max_scheduled.empty() && max_bytes.empty()))
    return fail("migrate: --jobs, --events, --per-second, --max-scheduled and --max-bytes are for --grant-submit-to");
  auto names = [](const std::string& flag, const std::string& text, std::vector<std::string>& into) {
    std::size_t from = 0;
    while (from <= text.size() && !text.empty()) {
      const std::size_t comma = std::min(text.find(',', from), text.size());
      const std::string name = text.substr(from, comma - from);
      if (name.empty() || name.size() > 200)
        return fail("migrate: " + flag + " takes names separated by commas, each 1-200 characters, got '" +
                    text.substr(0, 64) + "'");
      into.push_back(name);
      from = comma + 1;
    }
    return 0;
  };
  auto number = [](const std::string& flag, const std::string& text, int low, int high, int& into) {
    if (text.empty()) return 0;
    if (text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos || std::stoi(text) < low ||
        std::stoi(text) > high)
      return fail("migrate: " + flag + " must be a number from " + std::to_string(low) + " to " + std::to_string(high) +
                  ", got '" + text.substr(0, 64) + "'");
    into = std::stoi(text);
    return 0;
  };
  for (int bad : {names("--jobs", jobs, scope.jobs), names("--events", events, scope.event_kinds),
                  number("--per-second", per_second, 1, 100000, scope.per_second),
                  number("--max-scheduled", max_scheduled, 0, 10000000, scope.max_scheduled),
                  number("--max-bytes", max_bytes, 0, 65536, scope.max_bytes)})
    if (bad) return bad;
  if (file.empty() && url.empty())
    return fail(std::string("migrate: --config FILE or --database-url URL is required\n") + usage);
  baton::node::NodeConfig defaults;
  if (!file.empty()) {
    auto cfg = baton::node::load_node_config(file);
    if (!cfg) return fail("invalid config:\n" + cfg.error().message);
    defaults = *cfg;
  }
  if (url.empty()) url = defaults.database_url;
  baton::init_logging("migrate", defaults.log_level, defaults.log_format);
  const std::string where = baton::store::pg::describe_url(url);
  auto r = migrate_with_retry(url, "baton migrate", defaults.database_start_timeout);
  if (!r) return fail("migrate: cannot migrate database " + where + ": " + r.error().message);
  std::cout << "schema at version " << r->current_version << " (applied " << r->applied.size() << " migration"
            << (r->applied.size() == 1 ? "" : "s") << ")\n";
  if (!grantee.empty()) {
    auto g = baton::store::pg::grant_runtime_role(url, grantee);
    if (!g) return fail("migrate: cannot grant the runtime role on " + where + ": " + g.error().message);
    std::cout << "granted " << grantee << " a node's rights on " << g->relations << " tables and views and "
              << g->sequences << " sequences of schema " << g->schema << "\n";
  }
  if (!submitter.empty()) {
    auto g = baton::store::pg::grant_submitter_role(url, submitter, scope);
    if (!g) return fail("migrate: cannot grant the submitter role on " + where + ": " + g.error().message);
    auto listed = [](const std::vector<std::string>& v) {
      std::string out;
      for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
      return v.empty() ? std::string("all") : out;
    };
    std::cout << "granted " << submitter << " EXECUTE on baton.trigger, baton.emit_event and baton.submission"
              << " (and nothing else): jobs " << listed(scope.jobs) << ", event kinds " << listed(scope.event_kinds)
              << ", " << scope.per_second << " a second, " << scope.max_scheduled << " scheduled ahead, "
              << scope.max_bytes << " bytes each\n";
  }
  return 0;
}

int cmd_worker(const std::vector<std::string>& args) {
  std::string file, error;
  if (!parse_config_flag(args, file, error)) return fail("worker: " + error + "\n" + usage);
  auto cfg = baton::worker::load_worker_config(file);
  if (!cfg) return fail("invalid config:\n" + cfg.error().message);
  baton::init_logging(cfg->worker_id, cfg->log_level, cfg->log_format);
  std::signal(SIGTERM, on_worker_signal);
  std::signal(SIGINT, on_worker_signal);
  std::signal(SIGPIPE, SIG_IGN);
  return baton::worker::run_agent(*cfg, stop_requested, drain_requested);
}

int cmd_node(const std::vector<std::string>& args) {
  std::string file, error;
  if (!parse_config_flag(args, file, error)) return fail("node: " + error + "\n" + usage);
  auto cfg = baton::node::load_node_config(file);
  if (!cfg) return fail("invalid config:\n" + cfg.error().message);
  baton::init_logging(cfg->node_id, cfg->log_level, cfg->log_format);
  for (const auto& o : cfg->env_overrides) spdlog::info("config_from_environment node={} {}", cfg->node_id, o);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  std::signal(SIGPIPE, SIG_IGN);

  const std::string where = baton::store::pg::describe_url(cfg->database_url);
  if (cfg->auto_migrate) {
    auto r = migrate_with_retry(cfg->database_url, cfg->node_id, cfg->database_start_timeout);
    // A role of its own that was not granted, or a schema that needs
    // migrating and a role that does not own it: say who can fix it.
    const bool rights = !r && (r.error().message.find("permission denied") != std::string::npos ||
                               r.error().message.find("must be owner") != std::string::npos);
    if (!r)
      return fail("node " + cfg->node_id + ": cannot start: database " + where + ": " + r.error().message +
                  (rights ? " (as the database's owner, run `baton migrate --database-url <the owner's URL> "
                            "--grant-to <this node's role>`: docs/operations.md, \"A runtime role apart from the "
                            "owner\")"
                          : ""));
  } else {
    baton::store::pg::PgLeaseStore probe(cfg->database_url, "baton-node-" + cfg->node_id + "-probe");
    auto r = probe.observe();
    if (!r)
      return fail("node " + cfg->node_id + ": cannot start: database " + where + ": " + r.error().message +
                  " (auto_migrate is false: run `baton migrate` first)");
  }

  // Behind a pooler that hands each transaction to any server connection
  // (pgbouncer in transaction mode) a node would never hear a notification
  // and lose its prepared statements: refused here, with what to change.
  // A database that cannot be asked now is the node's to wait for.
  constexpr std::chrono::milliseconds session_wait{5000};
  if (auto s = baton::store::pg::check_session_kept(cfg->database_url, "baton-node-" + cfg->node_id, session_wait);
      s && !s->kept)
    return fail("node " + cfg->node_id + ": cannot start: database " +
                baton::store::pg::session_not_kept_finding(where, session_wait) + ": " +
                baton::store::pg::session_not_kept_fix());
  else if (!s)
    spdlog::warn("session_check_skipped node={} reason={}", cfg->node_id, s.error().message);

  baton::node::NodePorts ports;
  ports.lease_store = [url = cfg->database_url](const std::string& app) {
    return std::make_unique<baton::store::pg::PgLeaseStore>(url, app);
  };
  ports.run_store = [url = cfg->database_url](const std::string& app) {
    return std::make_unique<baton::store::pg::PgRunStore>(url, app);
  };
  ports.leader_store = [url = cfg->database_url](const std::string& app) {
    return std::make_unique<baton::store::pg::PgLeaderStore>(url, app);
  };
  ports.admin_store = [url = cfg->database_url](const std::string& app) {
    auto store = std::make_unique<baton::store::pg::PgAdminStore>(url, app);
    // The admin API must answer (/status, /healthz) while the database does
    // not: its calls give up after 2 s and the page shows what it knows.
    store->set_call_deadline(std::chrono::seconds(2));
    return store;
  };
  ports.webhook_outbox = [url = cfg->database_url](const std::string& app) {
    return std::make_unique<baton::store::pg::PgWebhookOutbox>(url, app);
  };
  ports.verify_store = [url = cfg->database_url](const std::string& app) {
    return std::make_unique<baton::store::pg::PgVerifyStore>(url, app);
  };
  return baton::node::run_node(*cfg, ports, stop_requested);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "--version" || command == "version") {
      std::cout << "baton " << BATON_VERSION << " (worker protocol " << baton::protocol::protocol_version_min << "-"
                << baton::protocol::protocol_version_max << ")\n";
      return 0;
    }
    if (auto u = command_usage().find(command); u != command_usage().end() && asks_for_help(args)) {
      std::cout << u->second;
      return 0;
    }
    if (command == "doctor") {
      std::string file, error;
      if (!parse_config_flag(args, file, error)) return fail("doctor: " + error + "\n" + usage);
      spdlog::set_level(spdlog::level::off);  // findings only, not the libraries' log lines
      return baton::doctor::report(file, baton::doctor::examine(file), std::cout);
    }
    if (command == "verify") {
      spdlog::set_level(spdlog::level::warn);
      return baton::verify_command::run(args);
    }
    if (command == "node") return cmd_node(args);
    if (command == "migrate") return cmd_migrate(args);
    if (command == "worker") return cmd_worker(args);
    if (command == "ctl") {
      std::signal(SIGPIPE, SIG_IGN);
      return baton::ctl::run_ctl(
          args,
          [](const std::string& name) -> std::optional<std::string> {
            const char* v = std::getenv(name.c_str());
            return v ? std::optional<std::string>(v) : std::nullopt;
          },
          std::cout, std::cerr);
    }
    if (command == "cron") {
      const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
      const auto r = baton::leader_core::run_cron_command(args, now);
      std::cout << r.out;
      std::cerr << r.err;
      return r.exit_code;
    }
    return fail("unknown command '" + command + "'\n" + usage);
  } catch (const std::exception& e) {
    return fail(std::string("fatal: ") + e.what(), 1);
  }
}
