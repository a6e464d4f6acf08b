#include "baton/worker/worker_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "baton/base/config_yaml.h"
#include "baton/base/ids.h"
#include "baton/base/redact.h"

namespace baton::worker {

Result<WorkerConfig> load_worker_config(const std::string& file) {
  auto root = load_yaml_file(file);
  if (!root) return root.error();
  ConfigErrors errors(file);
  ConfigMap top(*root, "", errors);
  WorkerConfig cfg;
  auto resolve = [&](const std::string& p) { return resolve_config_path(file, p); };
  if (auto v = top.string("worker_id", true)) {
    if (v->empty() || v->size() > 200)
      errors.add("worker_id", "must be 1-200 characters");
    else if (!id_alphabet(*v))
      errors.add("worker_id", "may hold only letters, digits, '-', '_' and '.'");
    cfg.worker_id = *v;
  }
  if (auto v = top.string_list("coordinators")) {
    for (const auto& ep : *v) {
      auto colon = ep.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == ep.size())
        errors.add("coordinators", "'" + ep + "' must be HOST:PORT");
    }
    cfg.coordinators = *v;
  }
  if (cfg.coordinators.empty()) errors.add("coordinators", "must list at least one HOST:PORT");
  // The environment overrides the file for the secret files (docs/
  // operations.md, "Environment overrides").
  auto env = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v && *v ? std::optional<std::string>(v) : std::nullopt;
  };
  std::optional<std::string> token_file = top.string("token_file");
  if (auto e = env("BATON_WORKER_TOKEN_FILE")) token_file = e;
  if (const auto& v = token_file) {
    cfg.token_path = resolve(*v);
    std::ifstream in(resolve(*v));
    if (!in) {
      errors.add("token_file", "cannot read '" + resolve(*v) + "'");
    } else {
      std::stringstream s;
      s << in.rdbuf();
      cfg.token = s.str();
      while (!cfg.token.empty() && (cfg.token.back() == '\n' || cfg.token.back() == '\r' || cfg.token.back() == ' '))
        cfg.token.pop_back();
    }
  }
  if (auto v = top.string("enrollment_token_file")) cfg.enrollment_token_path = resolve(*v);
  if (auto e = env("BATON_ENROLLMENT_TOKEN_FILE")) cfg.enrollment_token_path = resolve(*e);
  if (auto v = top.string("credential_file")) cfg.credential_path = resolve(*v);
  if (auto v = top.integer("capacity", 0, 10000)) cfg.capacity = static_cast<int>(*v);
  cfg.prefetch = cfg.capacity;
  if (auto v = top.integer("prefetch", 0, 10000)) {
    cfg.prefetch = static_cast<int>(*v);
    if (cfg.prefetch > cfg.capacity)
      errors.add("prefetch", "must not be more than capacity (" + std::to_string(cfg.capacity) + ")");
  }
  if (auto v = top.string("spool_dir", true)) cfg.spool_dir = resolve(*v);
  if (auto v = top.string("log_level")) cfg.log_level = *v;
  if (auto v = top.string("log_format")) {
    if (auto f = parse_log_format(*v))
      cfg.log_format = *f;
    else
      errors.add("log_format", "must be text or json; got '" + *v + "'");
  }
  if (auto v = top.string("metrics_listen")) {
    if (v->rfind(':') == std::string::npos || v->rfind(':') == 0)
      errors.add("metrics_listen", "must be HOST:PORT (an IP address and a port), got '" + *v + "'");
    cfg.metrics_listen = *v;
  }
  if (auto v = top.string("task_cgroup")) {
    if (v->empty() || (*v != "auto" && *v != "off" && v->front() != '/'))
      errors.add("task_cgroup", "must be auto, off or an absolute path to a cgroup v2 directory, not '" + *v + "'");
    cfg.task_cgroup = *v;
  }
  if (auto v = top.string("task_user")) {
    std::string why;
    if (auto u = resolve_task_user(*v, &why)) {
      cfg.task_user = std::move(*u);
      if (auto problem = task_user_switch_problem(); !problem.empty()) errors.add("task_user", problem);
    } else {
      errors.add("task_user", why);
    }
  } else if (auto problem = capabilities_without_task_user_problem(); !problem.empty()) {
    errors.add("task_user", problem);
  }
  if (auto v = top.string_list("task_env_allowlist")) {
    for (const auto& name : *v)
      if (name.empty() || name.find('=') != std::string::npos || name.find('*') < name.size() - 1)
        errors.add("task_env_allowlist", "'" + name + "' must be a variable name, or a prefix ending in *");
    cfg.task_env_allowlist = *v;
  }
  top.mark_known("labels");
  if (auto l = (*root)["labels"]; l && l.IsMap()) {
    for (const auto& kv : l) cfg.labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
  } else if (l && !l.IsNull()) {
    errors.add("labels", "must be a mapping of label to value");
  }
  top.mark_known("sql_connections");
  if (auto c = (*root)["sql_connections"]; c && c.IsMap()) {
    for (const auto& kv : c) {
      const auto name = kv.first.as<std::string>();
      const auto url = kv.second.as<std::string>();
      if (url.rfind("postgresql://", 0) != 0 && url.rfind("postgres://", 0) != 0)
        errors.add("sql_connections." + name, "must be a postgresql:// URL, got '" + redact_url(url) + "'");
      cfg.sql_connections[name] = url;
    }
  } else if (c && !c.IsNull()) {
    errors.add("sql_connections", "must be a mapping of name to postgresql:// URL");
  }
  top.mark_known("endpoint_map");
  if (auto m = (*root)["endpoint_map"]; m && m.IsMap()) {
    for (const auto& kv : m) cfg.endpoint_map[kv.first.as<std::string>()] = kv.second.as<std::string>();
  } else if (m && !m.IsNull()) {
    errors.add("endpoint_map", "must be a mapping of HOST:PORT to HOST:PORT");
  }
  if (auto v = top.duration("drain_timeout")) cfg.drain_timeout = *v;
  ConfigMap rc = top.map("reconnect");
  if (auto v = rc.duration("base")) cfg.reconnect_base = *v;
  if (auto v = rc.duration("max")) cfg.reconnect_max = *v;
  rc.reject_unknown_keys();
  // Verified TLS to the nodes, or plaintext said out loud (docs/security.md, "TLS").
  const bool has_tls = (*root)["tls"].IsDefined() && !(*root)["tls"].IsNull();
  ConfigMap tl = top.map("tls");
  if (auto v = tl.string("ca_file", /*required=*/has_tls)) cfg.tls.ca_file = resolve(*v);
  if (auto v = tl.string("cert_file")) cfg.tls.cert_file = resolve(*v);
  if (auto v = tl.string("key_file")) cfg.tls.key_file = resolve(*v);
  tl.reject_unknown_keys();
  if (cfg.tls.cert_file.empty() != cfg.tls.key_file.empty())
    errors.add("tls.cert_file", "and tls.key_file go together: give both or neither");
  // One way to authenticate: the cluster's shared token, or a credential of
  // this worker's own from enrollment (docs/security.md, "Worker identity").
  if (cfg.credential_path.empty() && !cfg.spool_dir.empty()) cfg.credential_path = cfg.spool_dir + "/credential";
  if (!cfg.token_path.empty() && !cfg.enrollment_token_path.empty())
    errors.add("token_file", "and enrollment_token_file are two ways to authenticate: give one");
  else if (cfg.token_path.empty() && cfg.enrollment_token_path.empty())
    errors.add("enrollment_token_file",
               "is required (a bootstrap token from `baton ctl workers enroll`), or token_file for the cluster's "
               "shared worker token");
  else if (!cfg.enrollment_token_path.empty() && !std::filesystem::exists(cfg.enrollment_token_path) &&
           !std::filesystem::exists(cfg.credential_path))
    errors.add("enrollment_token_file", "cannot read '" + cfg.enrollment_token_path +
                                            "', and there is no credential at '" + cfg.credential_path +
                                            "' from an earlier enrollment");
  if (auto v = top.boolean("insecure")) cfg.insecure = *v;
  if (has_tls && cfg.insecure)
    errors.add("insecure",
               "true together with a tls map: give one (tls to verify the nodes, insecure: true for "
               "plaintext)");
  if (!has_tls && !cfg.insecure)
    errors.add("tls",
               "is required (ca_file: the CA of the nodes' certificates), or `insecure: true` for a plaintext "
               "WebSocket; the worker token then crosses the network in the clear (docs/security.md, \"TLS\")");
  top.reject_unknown_keys();
  if (!errors.empty()) return make_error(Errc::bad_config, errors.joined());
  return cfg;
}

}  // namespace baton::worker
