#include "doctor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "baton/base/config_yaml.h"
#include "baton/node/node_config.h"
#include "baton/store_pg/inspect.h"
#include "baton/store_pg/pg_session.h"
#include "baton/store_pg/session_check.h"
#include "baton/tls/certificate_facts.h"
#include "baton/tls/tls_context.h"
#include "baton/worker/coordinator_probe.h"
#include "baton/worker/task_cgroup.h"
#include "baton/worker/unit_grant.h"
#include "baton/worker/worker_config.h"

namespace baton::doctor {

namespace {

using Level = Finding::Level;

Finding ok(std::string area, std::string detail) { return {Level::ok, std::move(area), std::move(detail), {}}; }
Finding warn(std::string area, std::string detail, std::string fix) {
  return {Level::warn, std::move(area), std::move(detail), std::move(fix)};
}
Finding fail(std::string area, std::string detail, std::string fix) {
  return {Level::fail, std::move(area), std::move(detail), std::move(fix)};
}

std::string octal(unsigned mode) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", mode & 07777);
  return b;
}

/// A secret or key file must not be readable by anyone but its owner.
void private_file(std::vector<Finding>& out, const std::string& what, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // the config check already said it cannot be read
  if (st.st_mode & 077)
    out.push_back(warn("files", what + " " + path + " is open to group or others (mode " + octal(st.st_mode) + ")",
                       "chmod 600 " + path + " (owned by the user the service runs as)"));
  else
    out.push_back(ok("files", what + " " + path + " is private (mode " + octal(st.st_mode) + ")"));
}

std::string host_of(const std::string& endpoint) { return endpoint.substr(0, endpoint.rfind(':')); }

/// Validity and, when `must_name` is given, whether it names that host.
void certificate(std::vector<Finding>& out, const std::string& what, const std::string& file,
                 const std::string& must_name, const std::string& name_fix) {
  auto facts = tls::read_certificate(file);
  if (!facts) {
    out.push_back(fail("tls", what + ": " + facts.error().message, "give a PEM certificate file"));
    return;
  }
  const double now = static_cast<double>(std::time(nullptr));
  const long days = std::lround(std::floor((facts->not_after_unix - now) / 86400));
  std::string names;
  for (const auto& n : facts->names) names += (names.empty() ? "" : ", ") + n;
  if (facts->not_after_unix <= now)
    out.push_back(fail("tls", what + " " + file + " has expired",
                       "issue a new certificate and write it (and its key) over the old files"));
  else if (days < 14)
    out.push_back(warn("tls", what + " " + file + " expires in " + std::to_string(days) + " days",
                       "renew it: write the new files over the old; a node serves them within a second, a worker "
                       "uses them at its next connection"));
  else
    out.push_back(ok("tls", what + " " + file + " (" + facts->subject + "; " + (names.empty() ? "no names" : names) +
                                ") is valid " + std::to_string(days) + " more days"));
  if (!must_name.empty() && !tls::certificate_names_host(file, must_name))
    out.push_back(
        fail("tls", what + " does not name " + must_name + " (it names: " + (names.empty() ? "nothing" : names) + ")",
             name_fix));
}

void examine_node(const std::string& file, std::vector<Finding>& out) {
  auto cfg = node::load_node_config(file);
  if (!cfg) {
    out.push_back(fail("config", cfg.error().message, "fix the keys named (configs/node.yaml documents every key)"));
    return;
  }
  out.push_back(ok("config", file + " loads (node " + cfg->node_id + ")"));
  if (cfg->worker_token_path.empty())
    out.push_back(ok("files", "no worker_token_file: workers attach only with credentials of their own (enrollment)"));
  else
    private_file(out, "worker_token_file", cfg->worker_token_path);
  private_file(out, "admin_token_file", cfg->admin_token_path);

  if (cfg->insecure) {
    out.push_back(warn("tls", "insecure: true: tokens and all traffic cross the network in the clear",
                       "configure tls (cert_file, key_file) and give workers the CA (docs/security.md, \"TLS\")"));
  } else if (auto ctx = tls::make_server_context(cfg->tls); !ctx) {
    out.push_back(fail("tls", ctx.error().message, "give the node's PEM certificate chain and its own key"));
  } else {
    out.push_back(ok("tls", "the certificate and key load and match"));
    const std::string host = host_of(cfg->advertise);
    if (host == "0.0.0.0" || host == "::" || host == "[::]") {
      out.push_back(warn("tls", "advertise is " + cfg->advertise + ", which nobody can dial",
                         "set advertise to the address workers and clients reach this node by"));
      certificate(out, "the node's certificate", cfg->tls.cert_file, "", "");
    } else {
      certificate(out, "the node's certificate", cfg->tls.cert_file, host,
                  "issue a certificate naming " + host +
                      " (subjectAltName), or set advertise to a name it carries: workers and clients dial it and "
                      "refuse a certificate that does not name it");
    }
    private_file(out, "tls.key_file", cfg->tls.key_file);
  }

  const std::string where = store::pg::describe_url(cfg->database_url);
  // A link that crosses the network without a verified certificate: what is
  // in the path can read the node's statements and answer as the database.
  if (auto link = store::pg::database_link(cfg->database_url); link && link->remote && !link->verified())
    out.push_back(warn("database",
                       "the link to " + link->hosts + " is not TLS-verified (sslmode=" + link->sslmode +
                           "): anything in the path can read it or pose as the database",
                       "add sslmode=verify-full and sslrootcert=<the server's CA file> to database.url"));
  auto db = store::pg::inspect_database(cfg->database_url);
  if (!db) {
    out.push_back(fail("database", "cannot connect to " + where + ": " + db.error().message,
                       "check database.url, that PostgreSQL runs there, and that pg_hba.conf lets this host in"));
  } else {
    if (db->in_recovery)
      out.push_back(fail("database", where + " is a standby (in recovery): the node refuses to write to it",
                         "point database.url at the primary, or list every host (postgresql://h1,h2/baton): the "
                         "node connects to whichever is the primary"));
    else
      out.push_back(ok("database", where + " is a primary (PostgreSQL " + db->server_version + ")"));
    if (db->schema_version > db->schema_version_shipped)
      out.push_back(fail("database",
                         "the schema is at version " + std::to_string(db->schema_version) +
                             ", newer than this binary's " + std::to_string(db->schema_version_shipped),
                         "upgrade this node's binary (nodes first, then workers: docs/operations.md)"));
    else if (db->schema_version < db->schema_version_shipped && !db->owns_tables && db->schema_version > 0)
      out.push_back(fail("database",
                         "the schema is at version " + std::to_string(db->schema_version) + ", this binary needs " +
                             std::to_string(db->schema_version_shipped) + ", and the role " + db->role +
                             " does not own the tables, so the node cannot migrate them",
                         "as the owner: `baton migrate --database-url <the owner's URL> --grant-to " + db->role +
                             "` (docs/operations.md, \"A runtime role apart from the owner\")"));
    else if (db->schema_version < db->schema_version_shipped && !cfg->auto_migrate)
      out.push_back(warn("database",
                         "the schema is at version " + std::to_string(db->schema_version) + " and this binary needs " +
                             std::to_string(db->schema_version_shipped),
                         "run `baton migrate --config " + file + "` (auto_migrate is false)"));
    else
      out.push_back(ok(
          "database", "schema version " + std::to_string(db->schema_version) +
                          (db->schema_version < db->schema_version_shipped
                               ? " (the node applies up to " + std::to_string(db->schema_version_shipped) + " at start)"
                               : "")));
    // A node holds the database URL: whoever takes a node's host holds
    // its role. A superuser can also disable the audit log's
    // append-only trigger and run programs on the database host.
    if (db->superuser)
      out.push_back(fail("database",
                         "the role " + db->role +
                             " is a superuser: a taken node's host could run programs on the database's host and "
                             "rewrite the audit log",
                         "give the nodes a role of their own that owns the database and nothing more "
                         "(docs/operations.md, \"A least-privilege database role\")"));
    else if (db->server_rights)
      out.push_back(
          fail("database",
               "the role " + db->role +
                   " may run programs or read and write files on the database's host "
                   "(pg_execute_server_program, pg_read_server_files or pg_write_server_files)",
               "REVOKE those roles from " + db->role + " (docs/operations.md, \"A least-privilege database role\")"));
    else
      out.push_back(ok("database", "the role " + db->role + " is not a superuser and has no server-program rights"));
    // The owner of the tables can drop the audit log's append-only trigger
    // (and any table): a node needs row rights only.
    if (!db->superuser && db->owns_tables)
      out.push_back(warn("database",
                         "the role " + db->role +
                             " owns Baton's tables: whoever takes a node's host could drop the audit log's "
                             "append-only trigger, or a table",
                         "keep " + db->role +
                             " for migrations, create a role for the nodes, run `baton migrate --database-url <" +
                             db->role +
                             "'s URL> --grant-to <that role>` and put that role in database.url (docs/operations.md, "
                             "\"A runtime role apart from the owner\")"));
    else if (!db->superuser && db->schema_version > 0)
      out.push_back(ok("database", "the role " + db->role +
                                       " does not own Baton's tables (the audit log is append-only against it)"));
    // Baton's SECURITY DEFINER functions resolve names in its schema: no
    // one else may create there (security review N-L9).
    if (!db->schema_creators.empty())
      out.push_back(fail("database",
                         "the roles " + db->schema_creators + " may create objects in schema " + db->schema +
                             ", where Baton's SECURITY DEFINER functions (baton.trigger and the like) look names up",
                         "REVOKE CREATE ON SCHEMA " + db->schema + " FROM " + db->schema_creators +
                             " (docs/security.md, \"Safe defaults\")"));
    else if (!db->schema.empty())
      out.push_back(ok("database", "no role but the owner may create objects in schema " + db->schema));
    // Standbys that all stream asynchronously are a failover waiting to
    // lose commits (a failover tool promotes one of them); no standby at
    // all is a database without failover, said but not refused.
    if (db->synchronous_standby_names.empty() && db->standbys_streaming > 0)
      out.push_back(fail("replication",
                         std::to_string(db->standbys_streaming) + " standby" +
                             (db->standbys_streaming == 1 ? " streams" : "s stream") +
                             " and none is synchronous (synchronous_standby_names is empty)",
                         "a failover to an asynchronous standby can lose an epoch bump and run writes: set "
                         "synchronous_standby_names (or the failover manager's number of synchronous standbys) "
                         "to at least 1 (docs/operations.md, \"PostgreSQL high availability\")"));
    else if (db->synchronous_standby_names.empty())
      out.push_back(warn("replication", "no synchronous standby (synchronous_standby_names is empty)",
                         "an asynchronous failover can lose an epoch bump and let a stale leader's epoch be reused: "
                         "run a synchronous standby (docs/operations.md, \"PostgreSQL high availability\")"));
    else if (db->sync_standbys_streaming == 0)
      out.push_back(warn("replication",
                         "synchronous_standby_names is '" + db->synchronous_standby_names +
                             "' but no standby streams in sync" +
                             (db->standbys_streaming ? "" : " (none is connected, or this role cannot see them)"),
                         "start the standby or fix its primary_conninfo: until one is in sync, every commit waits"));
    else {
      char lag[96];
      std::snprintf(lag, sizeof lag, "replay lag %.3f s, the slowest %lld bytes behind", db->replay_lag_s,
                    db->replay_behind_bytes);
      out.push_back(ok("replication", std::to_string(db->sync_standbys_streaming) + " of " +
                                          std::to_string(db->standbys_streaming) + " standbys streaming in sync ('" +
                                          db->synchronous_standby_names + "'); " + lag));
    }
    // A pooler in transaction mode passes every query above and breaks the
    // node's notifications and prepared statements.
    constexpr std::chrono::milliseconds session_wait{3000};
    if (auto s = store::pg::check_session_kept(cfg->database_url, "baton-doctor", session_wait); s && s->kept)
      out.push_back(ok("database", "one session per connection (a NOTIFY reached the connection that LISTENed, in " +
                                       std::to_string(s->waited.count()) + " ms)"));
    else if (s)
      out.push_back(fail("database", store::pg::session_not_kept_finding(where, session_wait),
                         store::pg::session_not_kept_fix()));
    const double here = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double skew = here - db->now_unix;
    char text[64];
    std::snprintf(text, sizeof text, "%.0f ms %s", std::fabs(skew) * 1000, skew >= 0 ? "ahead of" : "behind");
    if (std::fabs(skew) > 1.0)
      out.push_back(warn("clock", std::string("this host's clock is ") + text + " the database's",
                         "run NTP (chrony) here and on the database host: leases are judged by the database's "
                         "clock, cron slots and log times by this one"));
    else
      out.push_back(ok("clock", std::string("this host's clock is ") + text + " the database's"));
  }

  if (!cfg->log_archive_dir.empty()) {
    if (::access(cfg->log_archive_dir.c_str(), W_OK | X_OK) != 0)
      out.push_back(fail("files", "log_archive_dir " + cfg->log_archive_dir + " is not a writable directory",
                         "mkdir -p " + cfg->log_archive_dir + " and make it the service user's"));
    else
      out.push_back(ok("files", "log_archive_dir " + cfg->log_archive_dir + " is writable"));
  }
}

/// What the worker's systemd unit gives it (security review N1): read from
/// the unit and its drop-ins, since doctor usually runs as root before the
/// service does, and the worker sees what it holds only once started.
void unit_capabilities(bool task_user, std::vector<Finding>& out) {
  const std::string name = "baton-worker.service";
  const auto dirs = worker::unit_dirs();
  const auto unit = worker::read_unit_grant(name, dirs);
  if (!unit) {
    std::string where;
    for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d;
    out.push_back(ok("capability", "no " + name + " in " + where +
                                       ": the worker holds what its starter gives it (it refuses to start holding "
                                       "CAP_SETUID, CAP_SETGID or CAP_KILL without task_user)"));
    return;
  }
  std::string caps, extra;
  for (const auto& c : unit->ambient) {
    caps += (caps.empty() ? "" : " ") + c;
    if (c != "CAP_SETUID" && c != "CAP_SETGID" && c != "CAP_KILL") extra += (extra.empty() ? "" : " ") + c;
  }
  std::string files;
  for (const auto& f : unit->files) files += (files.empty() ? "" : ", ") + f;
  const std::string says = name + " (" + files + ") runs the worker as " +
                           (unit->user.empty() || unit->user == "root" ? std::string("root") : unit->user);
  if (unit->user.empty() || unit->user == "root") {
    out.push_back(warn("capability",
                       says + ": it holds every capability" +
                           (task_user ? ", its tasks none" : ", and so do its PROGRAM tasks' users"),
                       "run it as its own user (the package's unit has User=baton-worker)"));
  } else if (unit->ambient_inverted) {
    out.push_back(warn(
        "capability",
        says + " with every ambient capability but " + (caps.empty() ? "none" : caps) + " (AmbientCapabilities=~...)",
        "grant only CAP_SETUID CAP_SETGID CAP_KILL, what switching tasks to task_user needs"));
  } else if (!extra.empty()) {
    out.push_back(warn("capability",
                       says + " with ambient " + caps + ": " + extra +
                           " is more than a worker needs (tasks drop every capability, the worker keeps them)",
                       "grant only CAP_SETUID CAP_SETGID CAP_KILL (AmbientCapabilities= and CapabilityBoundingSet=)"));
  } else if (!caps.empty() && !task_user) {
    out.push_back(fail("capability",
                       says + " with ambient " + caps + " and task_user is not set: it will refuse to start",
                       "set task_user (the package makes baton-task), or remove the capabilities from the unit"));
  } else {
    out.push_back(ok("capability", says + (caps.empty() ? " with no capability" : " with ambient " + caps) +
                                       (task_user ? "; its tasks drop every capability before exec" : "")));
  }
}

void examine_worker(const std::string& file, std::vector<Finding>& out) {
  auto cfg = worker::load_worker_config(file);
  if (!cfg) {
    out.push_back(fail("config", cfg.error().message, "fix the keys named (configs/worker.yaml documents every key)"));
    return;
  }
  out.push_back(ok("config", file + " loads (worker " + cfg->worker_id + ")"));
  // Security review N1: what a PROGRAM task is (a worker holding the
  // unit's capabilities without a task user fails to load above).
  if (cfg->task_user)
    out.push_back(ok("task_user", "PROGRAM tasks run as " + cfg->task_user->name + " (uid " +
                                      std::to_string(cfg->task_user->uid) + "), with no capability"));
  else
    out.push_back(warn("task_user",
                       "task_user is not set: PROGRAM tasks run as the worker's own user and can read its "
                       "credential and spool",
                       "set task_user (the package makes baton-task; docs/security.md, \"Task users and resources\")"));
  unit_capabilities(cfg->task_user.has_value(), out);
  // What contains a task's tree and enforces its `resources` here
  // (docs/security.md, "Task users and resources").
  const worker::CgroupOutlook cg = worker::cgroup_outlook(cfg->task_cgroup);
  if (cg.base.empty()) {
    out.push_back(warn("cgroup",
                       "no task groups (" + cg.why +
                           "): a task's tree is contained by its supervisor alone (a detached descendant "
                           "outlives a killed supervisor), and resources fall back to per-process limits (memory "
                           "per process, pids per user, cpu not at all)",
                       "run the worker with a delegated cgroup v2 subtree (the package's unit has Delegate=yes) "
                       "and task_cgroup: auto"));
  } else {
    std::string missing;
    const std::pair<const char*, bool> wanted[] = {{"memory", cg.memory}, {"pids", cg.pids}, {"cpu", cg.cpu}};
    for (const auto& [name, offered] : wanted)
      if (!offered) missing += std::string(missing.empty() ? "" : ", ") + name;
    if (missing.empty())
      out.push_back(ok("cgroup", "task groups under " + cg.base +
                                     ", with the memory, pids and cpu controllers: resources are enforced per task"));
    else
      out.push_back(warn("cgroup",
                         "task groups under " + cg.base + ", but the hierarchy does not offer " + missing +
                             " there: those resources fall back to per-process limits",
                         "delegate the controllers to the worker's service (Delegate=yes, or "
                         "DelegateSubgroup/cgroup.subtree_control above it)"));
  }
  // SQL tasks' connections cross the network as the node's does (security
  // review M3): the same check, for each.
  for (const auto& [name, url] : cfg->sql_connections)
    if (auto link = store::pg::database_link(url); link && link->remote && !link->verified())
      out.push_back(warn("sql",
                         "sql_connections." + name + " reaches " + link->hosts +
                             " without a TLS-verified link "
                             "(sslmode=" +
                             link->sslmode +
                             "): anything in the path can read the tasks' SQL and "
                             "their results, or pose as the database",
                         "add sslmode=verify-full and sslrootcert=<the server's CA file> to its URL"));
  private_file(out, "token_file", cfg->token_path);
  if (cfg->insecure) {
    out.push_back(warn("tls", "insecure: true: the worker token and all traffic cross the network in the clear",
                       "set tls.ca_file to the CA of the nodes' certificates (docs/security.md, \"TLS\")"));
  } else if (auto ctx = tls::make_client_context(cfg->tls); !ctx) {
    out.push_back(fail("tls", ctx.error().message, "give the PEM CA that issued the nodes' certificates"));
  } else {
    out.push_back(ok("tls", "the CA " + cfg->tls.ca_file + " loads"));
    if (!cfg->tls.cert_file.empty()) {
      certificate(out, "the worker's certificate", cfg->tls.cert_file, "", "");
      if (!tls::certificate_file_names_worker(cfg->tls.cert_file, cfg->worker_id))
        out.push_back(fail("tls", "the worker's certificate does not name worker " + cfg->worker_id,
                           "issue one whose DNS subjectAltName (or common name) is exactly " + cfg->worker_id +
                               ": a node with tls.worker_certificates refuses another"));
      private_file(out, "tls.key_file", cfg->tls.key_file);
    }
  }
  for (const auto& ep : cfg->coordinators) {
    const std::string why = worker::probe_coordinator(*cfg, ep, std::chrono::seconds(3));
    if (why.empty()) {
      out.push_back(ok("coordinator", ep + " answers" + (cfg->insecure ? "" : ", its certificate verified")));
    } else {
      std::string fix = "check that a node listens there and that nothing between blocks the port";
      if (why.find("certificate verify failed") != std::string::npos)
        fix = "tls.ca_file must hold the CA that issued " + ep + "'s certificate, and the certificate must name " +
              host_of(ep);
      else if (why.find("answered 400") != std::string::npos && cfg->insecure)
        fix = "the node speaks TLS: set tls.ca_file instead of insecure: true";
      else if (why.find("tls:") == 0)
        fix = "the node may serve plaintext (insecure: true on the node): then both sides must say insecure";
      out.push_back(fail("coordinator", ep + ": " + why, fix));
    }
  }
  std::error_code ec;
  const std::filesystem::path spool(cfg->spool_dir);
  if (std::filesystem::exists(spool, ec)) {
    if (::access(cfg->spool_dir.c_str(), W_OK | X_OK) != 0)
      out.push_back(fail("files", "spool_dir " + cfg->spool_dir + " is not writable",
                         "make it the service user's (chown), mode 0700"));
    else
      out.push_back(ok("files", "spool_dir " + cfg->spool_dir + " is writable"));
  } else if (::access(spool.parent_path().c_str(), W_OK | X_OK) != 0) {
    out.push_back(fail("files", "spool_dir " + cfg->spool_dir + " does not exist and cannot be made",
                       "mkdir -p " + cfg->spool_dir + " && chmod 700 " + cfg->spool_dir + " as the service user"));
  } else {
    out.push_back(ok("files", "spool_dir " + cfg->spool_dir + " will be made at start"));
  }
}

}  // namespace

std::vector<Finding> examine(const std::string& file) {
  std::vector<Finding> out;
  auto root = load_yaml_file(file);
  if (!root) {
    out.push_back(fail("config", root.error().message, "give the path of a node's or a worker's YAML config"));
    return out;
  }
  if ((*root)["node_id"])
    examine_node(file, out);
  else if ((*root)["worker_id"])
    examine_worker(file, out);
  else
    out.push_back(fail("config", file + " has neither node_id nor worker_id",
                       "give a node's config (configs/node.yaml) or a worker's (configs/worker.yaml)"));
  return out;
}

int report(const std::string& file, const std::vector<Finding>& findings, std::ostream& out) {
  int oks = 0, warns = 0, fails = 0;
  out << "baton doctor: " << file << "\n";
  for (const auto& f : findings) {
    const char* word = f.level == Level::ok ? "ok  " : f.level == Level::warn ? "warn" : "FAIL";
    (f.level == Level::ok ? oks : f.level == Level::warn ? warns : fails)++;
    char area[16];
    std::snprintf(area, sizeof area, "%-12s", f.area.c_str());
    out << word << "  " << area << f.detail << "\n";
    if (!f.fix.empty()) out << "      " << std::string(12, ' ') << "fix: " << f.fix << "\n";
  }
  out << oks << " ok, " << warns << " warning" << (warns == 1 ? "" : "s") << ", " << fails << " failure"
      << (fails == 1 ? "" : "s") << "\n";
  return fails ? 1 : 0;
}

}  // namespace baton::doctor
