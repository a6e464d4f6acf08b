// The admin API's handlers of the cluster: workers, leadership, nodes, the
// audit log, events, settings and tokens (the route table is in
// admin_handlers.cpp).
#include <spdlog/spdlog.h>

#include "admin_handler_support.h"
#include "admin_http.h"
#include "baton/admin/admin_api.h"
#include "baton/admin/job_files.h"
#include "baton/base/json_text.h"
#include "baton/base/run_state.h"
#include "baton/base/utf8.h"
#include "baton/leader_core/cron.h"
#include "baton/leader_core/live_settings.h"

namespace baton::admin {

using namespace admin_http;

namespace {

namespace lc = leader_core;

const char* type_name(lc::SettingKind k) {
  switch (k) {
    case lc::SettingKind::boolean: return "boolean";
    case lc::SettingKind::integer: return "integer";
    case lc::SettingKind::selectors: return "selectors";
  }
  return "";
}

/// The node config's value of a live setting (what an unset key means).
json::value default_of(const lc::SettingSpec& spec, const lc::RuntimeConfig& rt) {
  const std::string_view k = spec.key;
  if (spec.kind == lc::SettingKind::boolean) return true;
  if (spec.kind == lc::SettingKind::selectors) return json::array{};
  if (k == "retention_days") return 30;
  if (k == "reassign_after_ms") return rt.reassign_after.count();
  if (k == "heartbeat_interval_ms") return rt.heartbeat_interval.count();
  if (k == "heartbeat_timeout_ms") return rt.heartbeat_timeout.count();
  if (k == "continuation_timeout_ms") return rt.continuation_timeout.count();
  if (k == "continuation_margin_ms") return rt.continuation_margin.count();
  if (k == "dispatch_batch") return rt.dispatch_batch;
  return nullptr;
}

/// What is wrong with `value` for `spec` (the key named), or nothing.
std::optional<std::string> bad_value(const lc::SettingSpec& spec, const json::value& value) {
  const std::string key(spec.key);
  switch (spec.kind) {
    case lc::SettingKind::boolean:
      if (value.is_bool()) return std::nullopt;
      return "setting '" + key + "' is a boolean: {\"value\": true} or {\"value\": false}";
    case lc::SettingKind::integer:
      if (value.is_int64() && value.as_int64() >= spec.min && value.as_int64() <= spec.max) return std::nullopt;
      return "setting '" + key + "' is a whole number of " + std::string(spec.unit) + " from " +
             std::to_string(spec.min) + " to " + std::to_string(spec.max);
    case lc::SettingKind::selectors: {
      const std::string form = "setting '" + key + "' is a list of label selectors: {\"value\": [\"pool=gpu\"]}";
      if (!value.is_array() || value.as_array().size() > 100) return form + " (at most 100)";
      for (const auto& v : value.as_array())
        if (!v.is_string() || v.as_string().size() > 1000 || !lc::parse_selector(v.as_string()))
          return form + "; " + (v.is_string() ? json_quote(std::string(v.as_string()).substr(0, 64)) : "an element") +
                 " is not k=v[,k=v]";
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

// --- workers ----------------------------------------------------------------

HttpResponse AdminApi::list_workers(const ApiCall& c, bool one) {
  if (one) {
    const auto& id = c.param("worker");
    if (id.empty() || id.size() > 200) return error(400, "bad_request", "a worker id is 1-200 characters");
    return one_or_404(with_reads([&](auto& s) { return s.list_workers(1, std::nullopt, id); }),
                      "worker " + json_quote(id.substr(0, 64)));
  }
  Paging page;
  if (auto bad = paging_of(c.params, false, page)) return error(400, "bad_request", *bad);
  return page_or_error(with_reads([&](auto& s) { return s.list_workers(page.limit, page.after_name, std::nullopt); }));
}

HttpResponse AdminApi::hold_worker(const ApiCall& c, const std::string& state) {
  const auto& id = c.param("worker");
  if (id.empty() || id.size() > 200) return error(400, "bad_request", "a worker id is 1-200 characters");
  auto r = with_store([&](auto& s) { return s.set_worker_admin_state(c.actor(), id, state); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  spdlog::info("worker_hold worker={} admin_state={} by={}", json_quote(id), state, json_quote(c.who.name));
  return ok_json(json::object{{"worker_id", id}, {"admin_state", state}});
}

// --- leadership, nodes, audit -------------------------------------------------

HttpResponse AdminApi::list_epochs(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  return page_or_error(with_reads([&](auto& s) { return s.list_epochs(page.limit, page.before_id); }));
}

HttpResponse AdminApi::hand_over(const ApiCall& c) {
  std::string to;
  if (!c.request.body.empty()) {
    auto body = body_object(c.request);
    if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
    for (const auto& kv : std::get<json::object>(body)) {
      if (kv.key() != "to")
        return error(400, "bad_request",
                     "unknown key " + json_quote(std::string(kv.key()).substr(0, 64)) + " (the body has to)");
      if (!kv.value().is_string())
        return error(400, "bad_request",
                     "'to' must be a node id (a string), got " + json::serialize(kv.value()).substr(0, 64));
      to = std::string(kv.value().as_string());
    }
    const bool valid = to.size() <= 64 && to.find_first_not_of(
                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789._-") == std::string::npos;
    if (!valid || (to.empty() && std::get<json::object>(body).contains("to")))
      return error(
          400, "bad_request",
          "'to' must be a node id (1 to 64 letters, digits, '.', '_' or '-'), got " + json_quote(to.substr(0, 64)));
  }
  if (!ports_.hand_over) return error(503, "unavailable", "this node cannot hand leadership over");
  const NodeStatus self = ports_.status ? ports_.status() : NodeStatus{};
  if (!to.empty() && to == self.node_id)
    return error(409, "conflict", "node " + to + " already leads: name another node, or none");
  // A node named must be one the registry shows alive (its heartbeat is
  // every 5 s): a typo would leave the cluster without a leader for two
  // leases.
  if (!to.empty()) {
    auto nodes = with_store([&](auto& s) { return s.list_nodes(500, std::nullopt); });
    if (!nodes) return db_error(nodes.error());
    bool alive = false;
    const json::value listed = json::parse(nodes->items_json);
    for (const auto& n : listed.as_array()) {
      const auto& o = n.as_object();
      alive =
          alive || (o.at("node_id").as_string() == to && o.at("role").as_string() != "stopped" &&
                    o.at("role").as_string() != "lost" && o.at("heartbeat_age_ms").to_number<std::int64_t>() < 30000);
    }
    if (!alive)
      return error(409, "conflict", "no node " + to + " is alive in the registry (baton ctl nodes): name a live one");
  }
  // Audited by the release itself, in its transaction (SPEC 2.64): a
  // handover is recorded if and only if it happened.
  auto r = ports_.hand_over(to, c.actor().name);
  if (!r) return error(503, "not_leader", "the handover did not happen: " + r.error().message);
  return ok_json(json::object{{"from", self.node_id}, {"to", to}, {"epoch", *r}, {"status", "released"}}, 202);
}

HttpResponse AdminApi::list_nodes(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, false, page)) return error(400, "bad_request", *bad);
  return page_or_error(with_reads([&](auto& s) { return s.list_nodes(page.limit, page.after_name); }));
}

HttpResponse AdminApi::list_audit(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  return page_or_error(
      with_reads([&](auto& s) { return s.list_audit(page.limit, page.before_id, text_param(c.params, "subject")); }));
}

// --- events -------------------------------------------------------------------

HttpResponse AdminApi::list_events(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  return page_or_error(
      with_reads([&](auto& s) { return s.list_events(page.limit, page.before_id, text_param(c.params, "kind")); }));
}

HttpResponse AdminApi::post_event(const ApiCall& c) {
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  for (const auto& kv : o)
    if (kv.key() != "kind" && kv.key() != "payload" && kv.key() != "dedupe_key")
      return error(400, "bad_request",
                   "unknown key " + json_quote(std::string(kv.key()).substr(0, 64)) +
                       " (an event has kind, payload and dedupe_key)");
  auto* kind = o.if_contains("kind");
  if (!kind || !kind->is_string() || kind->as_string().empty() || kind->as_string().size() > 200 ||
      std::string_view(kind->as_string()).rfind("job.succeeded:", 0) == 0)
    return error(400, "bad_request",
                 "'kind' must be a string of 1-200 characters (job.succeeded:* is reserved for run_after)");
  std::string payload = "{}";
  if (auto* p = o.if_contains("payload")) {
    if (!p->is_object()) return error(400, "bad_request", "'payload' must be a JSON object");
    payload = json::serialize(*p);
    if (payload.size() > 65536) return error(413, "too_large", "'payload' is larger than 64 KiB");
    if (auto denied = find_denied(*p, denylist_, "payload")) return error(400, "bad_request", *denied);
  }
  std::optional<std::string> dedupe;
  if (auto* d = o.if_contains("dedupe_key")) {
    if (!d->is_string() || d->as_string().empty() || d->as_string().size() > 200)
      return error(400, "bad_request", "'dedupe_key' must be a string of 1-200 characters");
    dedupe = std::string(d->as_string());
  }
  auto r =
      with_store([&](auto& s) { return s.post_event(c.actor(), std::string(kind->as_string()), payload, dedupe); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  auto out = json::parse(r->json).as_object();
  return ok_json(out, out.at("created").as_bool() ? 201 : 200);
}

// --- settings and tokens -------------------------------------------------------

HttpResponse AdminApi::get_settings(const ApiCall&) {
  auto stored = with_reads([](auto& s) { return s.settings_json(); });
  if (!stored) return db_error(stored.error());
  auto values = json::parse(*stored).as_object();
  json::object out;
  for (const auto& spec : lc::live_setting_specs()) {
    json::object item;
    item["type"] = type_name(spec.kind);
    item["effect"] = spec.effect;
    item["value"] = nullptr;
    item["default"] = default_of(spec, runtime_defaults_);
    if (spec.kind == lc::SettingKind::integer) {
      item["min"] = spec.min;
      item["max"] = spec.max;
      item["unit"] = spec.unit;
    }
    if (auto* v = values.if_contains(spec.key)) {
      item["value"] = v->as_object().at("value");
      item["updated_at"] = v->as_object().at("updated_at");
      item["updated_by"] = v->as_object().at("updated_by");
    }
    out[spec.key] = item;
  }
  return ok_json(out);
}

HttpResponse AdminApi::set_setting(const ApiCall& c) {
  const auto& key = c.param("key");
  const lc::SettingSpec* spec = lc::live_setting_spec(key);
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  auto* value = o.if_contains("value");
  if (o.size() != 1 || !value)
    return error(400, "bad_request", "the body must be {\"value\": ...} ({\"value\": null}: back to the node config)");
  if (!spec) {
    std::string names;
    for (const auto& s : lc::live_setting_specs()) names += (names.empty() ? "" : ", ") + std::string(s.key);
    return error(404, "not_found", "no setting " + json_quote(key.substr(0, 64)) + " (settings: " + names + ")");
  }
  if (!value->is_null()) {
    if (auto bad = bad_value(*spec, *value)) return error(400, "bad_request", *bad);
  }
  // Timings are checked together, with this node's config beneath the
  // stored values: the leader applies none of a set that breaks a rule.
  if (spec->kind == lc::SettingKind::integer) {
    auto stored = with_store([](auto& s) { return s.settings_json(); });
    if (!stored) return db_error(stored.error());
    std::map<std::string, std::vector<std::string>> raw;
    const json::value all = json::parse(*stored);
    for (const auto& [k, v] : all.as_object()) {
      const auto& val = v.as_object().at("value");
      if (val.is_int64()) raw[k] = {std::to_string(val.as_int64())};
    }
    if (value->is_null())
      raw.erase(key);
    else
      raw[key] = {std::to_string(value->as_int64())};
    auto live = lc::live_settings(raw, runtime_defaults_);
    if (!live.refused.empty()) return error(400, "bad_request", "setting '" + key + "' refused: " + live.refused[0]);
  }
  auto r = with_store([&](auto& s) { return s.set_setting(c.actor(), key, json::serialize(*value)); });
  if (!r) return db_error(r.error());
  spdlog::info("setting_set key={} value={} by={}", key, json::serialize(*value), json_quote(c.who.name));
  return ok_json(json::object{{"key", key}, {"value", *value}});
}

HttpResponse AdminApi::list_tokens(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  return page_or_error(with_reads([&](auto& s) { return s.list_tokens(page.limit, page.before_id); }));
}

HttpResponse AdminApi::create_token(const ApiCall& c) {
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  auto* name = o.if_contains("name");
  auto* role = o.if_contains("role");
  auto* ttl = o.if_contains("ttl_seconds");
  if (o.size() != (ttl ? 3u : 2u) || !name || !role || !name->is_string() || !role->is_string())
    return error(400, "bad_request",
                 "the body must be {\"name\": \"...\", \"role\": \"read|operate|admin\"} with an optional "
                 "\"ttl_seconds\"");
  std::optional<std::int64_t> ttl_seconds;
  if (ttl) {
    constexpr std::int64_t ttl_max = 10LL * 366 * 24 * 3600;
    if (!ttl->is_int64() || ttl->as_int64() < 60 || ttl->as_int64() > ttl_max)
      return error(
          400, "bad_request",
          "'ttl_seconds' must be a whole number of seconds from 60 to " + std::to_string(ttl_max) + " (ten years)");
    ttl_seconds = ttl->as_int64();
  }
  const std::string n(name->as_string());
  if (!valid_name(n) || n.size() > 100) return bad_name("token name", n);
  auto parsed = parse_role(std::string(role->as_string()));
  if (!parsed)
    return error(
        400, "bad_request",
        "'role' must be read, operate or admin, got " + json_quote(std::string(role->as_string()).substr(0, 64)));
  const std::string token = new_api_token();
  auto r = with_store(
      [&](auto& s) { return s.create_token(c.actor(), n, to_string(*parsed), sha256_hex(token), ttl_seconds); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  auto out = json::parse(r->json).as_object();
  out["token"] = token;
  return ok_json(out, 201);
}

HttpResponse AdminApi::revoke_token(const ApiCall& c) {
  auto id = parse_id(c.param("id"));
  if (!id) return bad_id("token id", c.param("id"));
  auto r = with_store([&](auto& s) { return s.revoke_token(c.actor(), *id); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(json::parse(r->json));
}

}  // namespace baton::admin
