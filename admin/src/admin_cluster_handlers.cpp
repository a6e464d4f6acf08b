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

namespace baton::admin {

using namespace admin_http;

namespace {

/// The settings an operator may set; each is applied by the nodes without
/// a restart (docs/operations.md, "Settings").
struct SettingSpec {
  const char* key;
  const char* type;  ///< boolean
  const char* effect;
};
constexpr SettingSpec known_settings[] = {
    {"dispatch_enabled", "boolean",
     "false: the leader assigns no runs (within runtime.controls_every, 500 ms by default); runs already assigned or "
     "running go on, and runs keep being created"},
    {"retention_days", "integer",
     "days finished runs (with their history and logs), decision-ledger entries, processed events and triaged "
     "dead letters are kept; the leader prunes older ones in bounded batches every runtime.prune_every (1-36500)"},
};

}  // namespace

// --- workers ----------------------------------------------------------------

HttpResponse AdminApi::list_workers(const ApiCall& c, bool one) {
  if (one) {
    const auto& id = c.param("worker");
    if (id.empty() || id.size() > 200) return error(400, "bad_request", "a worker id is 1-200 characters");
    return one_or_404(with_store([&](auto& s) { return s.list_workers(1, std::nullopt, id); }),
                      "worker " + json_quote(id.substr(0, 64)));
  }
  Paging page;
  if (auto bad = paging_of(c.params, false, page)) return error(400, "bad_request", *bad);
  return page_or_error(with_store([&](auto& s) { return s.list_workers(page.limit, page.after_name, std::nullopt); }));
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
  return page_or_error(with_store([&](auto& s) { return s.list_epochs(page.limit, page.before_id); }));
}

HttpResponse AdminApi::list_nodes(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, false, page)) return error(400, "bad_request", *bad);
  return page_or_error(with_store([&](auto& s) { return s.list_nodes(page.limit, page.after_name); }));
}

HttpResponse AdminApi::list_audit(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  return page_or_error(
      with_store([&](auto& s) { return s.list_audit(page.limit, page.before_id, text_param(c.params, "subject")); }));
}

// --- events -------------------------------------------------------------------

HttpResponse AdminApi::list_events(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  return page_or_error(
      with_store([&](auto& s) { return s.list_events(page.limit, page.before_id, text_param(c.params, "kind")); }));
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
  auto stored = with_store([](auto& s) { return s.settings_json(); });
  if (!stored) return db_error(stored.error());
  auto values = json::parse(*stored).as_object();
  json::object out;
  for (const auto& spec : known_settings) {
    json::object item{{"type", spec.type}, {"effect", spec.effect}, {"value", nullptr}};
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
  const SettingSpec* spec = nullptr;
  for (const auto& s : known_settings)
    if (key == s.key) spec = &s;
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  auto* value = o.if_contains("value");
  if (o.size() != 1 || !value) return error(400, "bad_request", "the body must be {\"value\": ...}");
  if (!spec) {
    std::string names;
    for (const auto& s : known_settings) names += (names.empty() ? "" : ", ") + std::string(s.key);
    return error(404, "not_found", "no setting " + json_quote(key.substr(0, 64)) + " (settings: " + names + ")");
  }
  if (std::string(spec->type) == "boolean" && !value->is_bool())
    return error(400, "bad_request", "setting '" + key + "' is a boolean: {\"value\": true} or {\"value\": false}");
  if (std::string(spec->type) == "integer" &&
      (!value->is_int64() || value->as_int64() < 1 || value->as_int64() > 36500))
    return error(400, "bad_request",
                 "setting '" + key + "' is a whole number of days from 1 to 36500: {\"value\": 30}");
  auto r = with_store([&](auto& s) { return s.set_setting(c.actor(), key, json::serialize(*value)); });
  if (!r) return db_error(r.error());
  spdlog::info("setting_set key={} value={} by={}", key, json::serialize(*value), json_quote(c.who.name));
  return ok_json(json::object{{"key", key}, {"value", *value}});
}

HttpResponse AdminApi::list_tokens(const ApiCall& c) {
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  return page_or_error(with_store([&](auto& s) { return s.list_tokens(page.limit, page.before_id); }));
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
