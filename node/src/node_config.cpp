#include "baton/node/node_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "baton/base/config_yaml.h"
#include "baton/base/redact.h"

#include "baton/base/ids.h"

namespace baton::node {

namespace {

bool valid_node_id(const std::string& id) { return !id.empty() && id.size() <= 64 && id_alphabet(id); }

// A secret from a file: trailing newlines are not part of it.
std::optional<std::string> read_secret(const std::string& path, const std::string& key, ConfigErrors& errors) {
  std::ifstream in(path);
  if (!in) {
    errors.add(key, "cannot read '" + path + "'");
    return std::nullopt;
  }
  std::stringstream s;
  s << in.rdbuf();
  std::string v = s.str();
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) v.pop_back();
  if (v.size() < 16) {
    errors.add(key, "'" + path + "' must hold a secret of at least 16 characters");
    return std::nullopt;
  }
  // The tokens earlier releases shipped as examples: known to anyone who
  // read them, so never a secret.
  for (const char* published : {"example-admin-token-change-me", "example-worker-token-change-me"})
    if (v == published) {
      errors.add(key, "'" + path +
                          "' holds a token published as an example: generate one, e.g. "
                          "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > FILE");
      return std::nullopt;
    }
  return v;
}

}  // namespace

Result<std::string> read_secret_file(const std::string& path, const std::string& key) {
  ConfigErrors errors(path);
  auto secret = read_secret(path, key, errors);
  if (!secret) return make_error(Errc::bad_config, errors.joined());
  return *secret;
}

Result<NodeConfig> load_node_config(const std::string& file) {
  auto root = load_yaml_file(file);
  if (!root) return root.error();
  ConfigErrors errors(file);
  ConfigMap top(*root, "", errors);
  NodeConfig cfg;
  auto resolve = [&](const std::string& p) { return resolve_config_path(file, p); };

  if (auto v = top.string("node_id", /*required=*/true)) {
    if (valid_node_id(*v))
      cfg.node_id = *v;
    else
      errors.add("node_id", "must be 1-64 characters of letters, digits, '-', '_' or '.', got '" + *v + "'");
  }
  if (auto v = top.string("listen")) {
    auto colon = v->rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == v->size())
      errors.add("listen", "must be HOST:PORT, got '" + *v + "'");
    else
      cfg.listen = *v;
  }
  if (auto v = top.string("advertise")) {
    auto colon = v->rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == v->size())
      errors.add("advertise", "must be HOST:PORT, got '" + *v + "'");
    else
      cfg.advertise = *v;
  }
  if (auto v = top.boolean("auto_migrate")) cfg.auto_migrate = *v;
  if (auto v = top.string("log_level")) {
    static const char* levels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
    bool ok = false;
    for (const char* l : levels) ok = ok || *v == l;
    if (ok)
      cfg.log_level = *v;
    else
      errors.add("log_level", "must be one of trace, debug, info, warn, error, critical, off; got '" + *v + "'");
  }
  if (auto v = top.string("log_format")) {
    if (auto f = parse_log_format(*v))
      cfg.log_format = *f;
    else
      errors.add("log_format", "must be text or json; got '" + *v + "'");
  }

  // Optional: without it, only workers with a credential of their own
  // (enrollment, docs/security.md "Worker identity") can attach.
  // The environment overrides the file for the database URL and the secret
  // files (docs/operations.md, "Environment overrides"): a unit's
  // Environment= or a container's variables, without editing the file.
  auto env = [&](const char* name, const char* key) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    cfg.env_overrides.push_back(std::string(key) + "=" + name);
    return std::string(v);
  };
  const auto worker_token_env = env("BATON_WORKER_TOKEN_FILE", "worker_token_file");
  if (auto v = top.string("worker_token_file"); v || worker_token_env) {
    cfg.worker_token_path = worker_token_env ? resolve_config_path(file, *worker_token_env) : resolve(*v);
    if (auto t = read_secret(cfg.worker_token_path, worker_token_env ? "BATON_WORKER_TOKEN_FILE" : "worker_token_file",
                             errors))
      cfg.worker_token = *t;
  }
  const auto admin_token_env = env("BATON_ADMIN_TOKEN_FILE", "admin_token_file");
  if (auto v = top.string("admin_token_file", /*required=*/!admin_token_env); v || admin_token_env) {
    cfg.admin_token_path = admin_token_env ? resolve_config_path(file, *admin_token_env) : resolve(*v);
    if (auto t =
            read_secret(cfg.admin_token_path, admin_token_env ? "BATON_ADMIN_TOKEN_FILE" : "admin_token_file", errors))
      cfg.admin_token = *t;
  }
  if (top.string("jobs_dir"))
    errors.add("jobs_dir",
               "nodes no longer load job files: job definitions live in the database. Remove jobs_dir and load "
               "the files once with `baton ctl apply -f DIR` (docs/operations.md, \"Jobs are data\")");
  if (auto v = top.boolean("metrics_require_token")) cfg.metrics_require_token = *v;
  if (auto v = top.string_list("payload_denylist")) cfg.payload_denylist = *v;
  if (auto v = top.string("log_archive_dir")) {
    if (v->empty())
      errors.add("log_archive_dir", "must name a directory (leave the key out for no archive)");
    else
      cfg.log_archive_dir = resolve(*v);
  }
  if (auto v = top.integer("log_archive_retention_days", 1, 36500))
    cfg.log_archive_retention_days = static_cast<int>(*v);
  if (auto v = top.string("incident_journal_dir")) {
    if (v->empty())
      errors.add("incident_journal_dir", "must name a directory (leave the key out for no incident journal)");
    else
      cfg.incident_journal_dir = resolve(*v);
  }
  if (auto v = top.integer("incident_journal_max_mb", 1, 1048576)) cfg.incident_journal_max_mb = static_cast<int>(*v);
  if (auto v = top.integer("incident_journal_max_days", 1, 36500)) cfg.incident_journal_max_days = static_cast<int>(*v);

  ConfigMap rt = top.map("runtime");
  auto dur = [&](const char* key, Millis& out) {
    if (auto v = rt.duration(key)) {
      if (v->count() <= 0)
        errors.add(rt.key_path(key), "must be positive");
      else
        out = *v;
    }
  };
  dur("heartbeat_interval", cfg.runtime.heartbeat_interval);
  dur("controls_every", cfg.runtime.controls_every);
  dur("heartbeat_timeout", cfg.runtime.heartbeat_timeout);
  dur("reassign_after", cfg.runtime.reassign_after);
  dur("reassign_detached_after", cfg.runtime.reassign_detached_after);
  dur("continuation_timeout", cfg.runtime.continuation_timeout);
  dur("continuation_margin", cfg.runtime.continuation_margin);
  dur("timeout_grace", cfg.runtime.timeout_grace);
  dur("dispatch_every", cfg.runtime.dispatch_every);
  // 0 means "assigned when due" (docs/operations.md), so not `dur`.
  if (auto v = rt.duration("assign_ahead")) {
    if (v->count() < 0)
      errors.add(rt.key_path("assign_ahead"), "must not be negative");
    else
      cfg.runtime.assign_ahead = *v;
  }
  dur("prune_every", cfg.runtime.prune_every);
  if (auto v = rt.boolean("assign_with_start")) cfg.runtime.assign_with_start = *v;
  if (auto v = rt.integer("dispatch_batch", 1, 100000)) cfg.runtime.dispatch_batch = static_cast<int>(*v);
  if (auto v = rt.integer("reassign_rate", 0, 1000000)) cfg.runtime.reassign_rate = static_cast<int>(*v);
  if (auto v = rt.integer("reassign_burst", 1, 1000000)) cfg.runtime.reassign_burst = static_cast<int>(*v);
  if (auto v = rt.integer("output_db_bytes", 0, std::int64_t{1} << 40)) cfg.runtime.output_db_bytes = *v;
  if (auto v = rt.integer("max_heartbeats_per_second", 0, 1000000))
    cfg.runtime.max_heartbeats_per_second = static_cast<int>(*v);
  if (auto v = rt.integer("workers_seen_rows_per_second", 1, 1000000))
    cfg.runtime.workers_seen_rows_per_second = static_cast<int>(*v);
  rt.reject_unknown_keys();
  cfg.runtime.log_archive = !cfg.log_archive_dir.empty();
  if (cfg.runtime.heartbeat_timeout <= cfg.runtime.heartbeat_interval)
    errors.add("runtime.heartbeat_timeout", "must be greater than runtime.heartbeat_interval");
  if (cfg.runtime.continuation_margin < cfg.runtime.heartbeat_timeout)
    errors.add("runtime.continuation_margin",
               "must be at least runtime.heartbeat_timeout (a worker may notice the detach that much later)");

  ConfigMap lim = top.map("limits");
  if (auto v = lim.integer("max_connections", 16, 1000000)) cfg.server_limits.max_connections = static_cast<int>(*v);
  if (auto v = lim.integer("max_connections_per_address", 1, 1000000))
    cfg.server_limits.max_connections_per_address = static_cast<int>(*v);
  if (auto v = lim.duration("request_deadline")) cfg.server_limits.request_deadline = *v;
  if (auto v = lim.duration("hello_deadline")) cfg.server_limits.hello_deadline = *v;
  if (auto v = lim.integer("trigger_rate", 0, 1000000)) cfg.api_limits.trigger_rate = static_cast<double>(*v);
  if (auto v = lim.integer("trigger_burst", 1, 1000000)) cfg.api_limits.trigger_burst = static_cast<double>(*v);
  if (auto v = lim.integer("read_rate", 0, 1000000)) cfg.api_limits.read_rate = static_cast<double>(*v);
  if (auto v = lim.integer("read_burst", 1, 1000000)) cfg.api_limits.read_burst = static_cast<double>(*v);
  if (auto v = lim.integer("auth_failure_rate", 0, 1000000))
    cfg.server_limits.auth_failure_rate = static_cast<double>(*v);
  if (auto v = lim.integer("auth_failure_burst", 1, 1000000))
    cfg.server_limits.auth_failure_burst = static_cast<double>(*v);
  if (auto v = lim.duration("auth_throttle_hold")) {
    if (v->count() > 10000)
      errors.add("limits.auth_throttle_hold", "must be at most 10s (a held answer keeps its connection)");
    else
      cfg.server_limits.auth_throttle_hold = *v;
  }
  if (auto v = lim.integer("admin_queue_max", 1, 100000)) cfg.server_limits.admin_queue_max = static_cast<int>(*v);
  if (auto v = lim.integer("pre_auth_body_bytes", 1024, static_cast<std::int64_t>(leader::http_body_bytes_max)))
    cfg.server_limits.pre_auth_body_bytes_max = static_cast<std::size_t>(*v);
  if (auto v = lim.integer("pre_hello_frame_bytes", 4096, 2 * 1024 * 1024))
    cfg.server_limits.pre_auth_frame_bytes_max = static_cast<std::size_t>(*v);
  lim.reject_unknown_keys();
  if (cfg.server_limits.max_connections_per_address > cfg.server_limits.max_connections)
    errors.add("limits.max_connections_per_address", "must be at most limits.max_connections");
  for (const auto& [key, d] : {std::pair{"limits.request_deadline", cfg.server_limits.request_deadline},
                               std::pair{"limits.hello_deadline", cfg.server_limits.hello_deadline}})
    if (d.count() < 100) errors.add(key, "must be at least 100ms");

  // TLS on the port, or plaintext said out loud: there is no default that
  // silently sends tokens in the clear (docs/security.md, "TLS").
  const bool has_tls = (*root)["tls"].IsDefined() && !(*root)["tls"].IsNull();
  ConfigMap tl = top.map("tls");
  if (auto v = tl.string("cert_file", /*required=*/has_tls)) cfg.tls.cert_file = resolve(*v);
  if (auto v = tl.string("key_file", /*required=*/has_tls)) cfg.tls.key_file = resolve(*v);
  if (auto v = tl.string("client_ca_file")) cfg.tls.client_ca_file = resolve(*v);
  cfg.tls.worker_certificates =
      cfg.tls.client_ca_file.empty() ? tls::WorkerCertificates::off : tls::WorkerCertificates::optional;
  if (auto v = tl.string("worker_certificates")) {
    if (*v == "off")
      cfg.tls.worker_certificates = tls::WorkerCertificates::off;
    else if (*v == "optional")
      cfg.tls.worker_certificates = tls::WorkerCertificates::optional;
    else if (*v == "required")
      cfg.tls.worker_certificates = tls::WorkerCertificates::required;
    else
      errors.add("tls.worker_certificates", "must be off, optional or required; got '" + *v + "'");
  }
  tl.reject_unknown_keys();
  if (cfg.tls.worker_certificates != tls::WorkerCertificates::off && cfg.tls.client_ca_file.empty())
    errors.add("tls.worker_certificates",
               std::string(tls::to_string(cfg.tls.worker_certificates)) + " needs tls.client_ca_file");
  if (auto v = top.boolean("insecure")) cfg.insecure = *v;
  if (has_tls && cfg.insecure)
    errors.add("insecure",
               "true together with a tls map: give one (tls for certificates, insecure: true for "
               "plaintext)");
  if (!has_tls && !cfg.insecure)
    errors.add("tls",
               "is required (cert_file and key_file), or `insecure: true` to serve plaintext HTTP and "
               "WebSocket; tokens then cross the network in the clear (docs/security.md, \"TLS\")");

  ConfigMap wh = top.map("webhooks");
  if (auto v = wh.string("ca_file")) cfg.webhooks.ca_file = resolve(*v);
  if (auto v = wh.duration("timeout")) {
    if (v->count() < 100 || v->count() > 60000)
      errors.add("webhooks.timeout", "must be from 100ms to 60s");
    else
      cfg.webhooks.timeout = *v;
  }
  if (auto v = wh.boolean("allow_loopback")) cfg.webhooks.destinations.allow_loopback = *v;
  if (auto v = wh.boolean("allow_link_local")) cfg.webhooks.destinations.allow_link_local = *v;
  wh.reject_unknown_keys();

  ConfigMap vf = top.map("verify");
  if (auto v = vf.boolean("enabled")) cfg.verify.enabled = *v;
  auto verify_dur = [&](const char* key, Millis& out, Millis lo, Millis hi, const char* range) {
    if (auto v = vf.duration(key)) {
      if (*v < lo || *v > hi)
        errors.add(vf.key_path(key), std::string("must be from ") + range);
      else
        out = *v;
    }
  };
  verify_dur("every", cfg.verify.every, Millis{1000}, Millis{3600000}, "1s to 1h");
  verify_dur("settle", cfg.verify.settle, Millis{0}, Millis{600000}, "0s to 10m");
  verify_dur("owner_grace", cfg.verify.owner_grace, Millis{1000}, Millis{86400000}, "1s to 24h");
  if (auto v = vf.integer("slice_runs", 1, 100000)) cfg.verify.slice_runs = static_cast<int>(*v);
  if (auto v = vf.integer("slices_per_sweep", 1, 1000)) cfg.verify.slices_per_sweep = static_cast<int>(*v);
  if (auto v = vf.integer("yield_above", 0, 10000000)) cfg.verify.yield_above_runs_per_s = static_cast<double>(*v);
  if (auto v = vf.integer("slices_under_load", 0, 1000)) cfg.verify.slices_under_load = static_cast<int>(*v);
  vf.reject_unknown_keys();

  ConfigMap db = top.map("database");
  const auto url_env = env("BATON_DATABASE_URL", "database.url");
  if (auto v = db.string("url", /*required=*/!url_env); v || url_env) {
    const std::string url = url_env ? *url_env : *v;
    if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
      cfg.database_url = url;
    else
      errors.add(url_env ? "BATON_DATABASE_URL" : "database.url",
                 "must be a postgresql:// URL, got '" + redact_url(url) + "'");
  }
  if (auto v = db.duration("start_timeout")) cfg.database_start_timeout = *v;
  db.reject_unknown_keys();

  ConfigMap el = top.map("election");
  if (auto v = el.duration("lease")) cfg.election.lease = *v;
  if (auto v = el.duration("renew_every")) cfg.election.renew_every = *v;
  if (auto v = el.duration("safety_margin")) cfg.election.safety_margin = *v;
  if (auto v = el.duration("poll_every")) cfg.election.poll_every = *v;
  el.reject_unknown_keys();
  if (errors.empty()) {
    for (const auto& m : consensus::validate(cfg.election)) {
      auto colon = m.find(": ");
      errors.add(m.substr(0, colon), m.substr(colon + 2));
    }
  }

  top.reject_unknown_keys();
  if (cfg.advertise.empty()) cfg.advertise = cfg.listen;
  cfg.webhooks.destinations.own_endpoints = {cfg.listen, cfg.advertise};
  if (!errors.empty()) return make_error(Errc::bad_config, errors.joined());
  return cfg;
}

}  // namespace baton::node
