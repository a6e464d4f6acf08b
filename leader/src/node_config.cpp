#include "baton/leader/node_config.h"

#include "baton/core/config_yaml.h"

namespace baton::leader {

namespace {

bool valid_node_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

}  // namespace

Result<NodeConfig> load_node_config(const std::string& file) {
  auto root = load_yaml_file(file);
  if (!root) return root.error();
  ConfigErrors errors(file);
  ConfigMap top(*root, "", errors);
  NodeConfig cfg;

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

  ConfigMap db = top.map("database");
  if (auto v = db.string("url", /*required=*/true)) {
    if (v->rfind("postgresql://", 0) == 0 || v->rfind("postgres://", 0) == 0)
      cfg.database_url = *v;
    else
      errors.add("database.url", "must be a postgresql:// URL, got '" + *v + "'");
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
  if (!errors.empty()) return make_error(Errc::bad_config, errors.joined());
  return cfg;
}

}  // namespace baton::leader
