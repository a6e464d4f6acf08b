// The admin API's handlers of jobs: list, show, why, put, delete, pause,
// trigger (the route table is in admin_handlers.cpp).
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

// --- jobs -------------------------------------------------------------------

namespace {
/// A cron schedule and its zone, parsed; nothing when either does not parse.
std::optional<std::pair<leader_core::CronSchedule, leader_core::CronZone>> schedule_in_zone(
    const std::string& schedule, const std::string& time_zone) {
  auto parsed = leader_core::parse_cron(schedule);
  auto located = leader_core::CronZone::locate(time_zone);
  auto* s = std::get_if<leader_core::CronSchedule>(&parsed);
  auto* zone = std::get_if<leader_core::CronZone>(&located);
  if (!s || !zone) return std::nullopt;
  return std::pair{std::move(*s), std::move(*zone)};
}
}  // namespace

std::optional<std::int64_t> due_slots(const std::string& schedule, const std::string& time_zone, std::int64_t since,
                                      std::int64_t until, std::int64_t cap) {
  auto sz = schedule_in_zone(schedule, time_zone);
  if (!sz) return std::nullopt;
  const auto& [cron, zone] = *sz;
  std::int64_t n = 0;
  auto at = std::chrono::sys_seconds{std::chrono::seconds{since - 1}};
  while (n <= cap) {
    auto next = leader_core::next_fire(cron, at, zone);
    if (!next || next->time_since_epoch().count() > until) return n;
    ++n;
    at = *next;
  }
  return std::nullopt;
}

std::optional<double> schedule_interval_s(const std::string& schedule, const std::string& time_zone, std::int64_t since,
                                          std::int64_t until) {
  auto sz = schedule_in_zone(schedule, time_zone);
  if (!sz) return std::nullopt;
  const auto& [cron, zone] = *sz;
  // The schedule's own slots from the window's start: those in the window,
  // and at least two even when the window is younger than one interval.
  constexpr int cap = 100000;
  auto at = std::chrono::sys_seconds{std::chrono::seconds{since - 1}};
  std::optional<std::int64_t> first, last;
  int n = 0;
  while (n < cap) {
    auto next = leader_core::next_fire(cron, at, zone);
    if (!next) break;
    const auto t = next->time_since_epoch().count();
    if (t > until && n >= 2) break;
    if (!first) first = t;
    last = t;
    ++n;
    at = *next;
  }
  if (n < 2) return std::nullopt;
  return static_cast<double>(*last - *first) / static_cast<double>(n - 1);
}

namespace {

// A cron job's cadence (docs/scheduling.md, "Cadence"): beside what the
// ledger says of each window's slots (fired, late, skipped), how many its
// schedule made due, what it never decided, and the configured and the
// effective interval between runs.
void add_due_slots(json::object& cadence, const std::string& schedule, const std::string& time_zone) {
  for (auto& [name, value] : cadence) {
    if (!value.is_object()) continue;
    auto& w = value.as_object();
    const auto* since = w.if_contains("since_unix");
    const auto* until = w.if_contains("until_unix");
    if (!since || !until || !since->is_int64() || !until->is_int64()) continue;
    const std::int64_t span = until->as_int64() - since->as_int64() + 1;
    const auto due = due_slots(schedule, time_zone, since->as_int64(), until->as_int64());
    const std::int64_t fired = w.at("fired").to_number<std::int64_t>();
    const std::int64_t skipped = w.at("skipped").to_number<std::int64_t>();
    w["due"] = due ? json::value(*due) : json::value(nullptr);
    w["undecided"] = due ? json::value(std::max<std::int64_t>(0, *due - fired - skipped)) : json::value(nullptr);
    // From the schedule itself (the mean gap between its slots), not the
    // window's length over its count: a window younger than the job's first
    // interval showed 45 s for a job that fires every 60.
    const auto every = schedule_interval_s(schedule, time_zone, since->as_int64(), until->as_int64());
    w["configured_interval_s"] = every ? json::value(*every) : json::value(nullptr);
    w["effective_interval_s"] =
        fired > 0 ? json::value(static_cast<double>(span) / static_cast<double>(fired)) : json::value(nullptr);
  }
}

}  // namespace

HttpResponse AdminApi::list_jobs(const ApiCall& c, bool one) {
  Paging paging;
  std::optional<std::string> only;
  if (one) {
    if (!valid_name(c.param("name"))) return bad_name("job name", c.param("name"));
    only = c.param("name");
  } else if (auto bad = paging_of(c.params, false, paging)) {
    return error(400, "bad_request", *bad);
  }
  auto page = with_reads([&](auto& s) { return s.list_jobs(paging.limit, paging.after_name, only); });
  if (!page) return db_error(page.error());
  if (only && page->jobs.empty()) return error(404, "not_found", "no job " + json_quote(*only));
  // The next fire time is the cron planner's, in the job's zone, from the
  // database's clock: when the leader will create the next run.
  json::array items;
  for (const auto& j : page->jobs) {
    json::object item = json::parse(j.item_json).as_object();
    json::value next = nullptr;
    if (j.schedule && !j.paused) {
      auto parsed = leader_core::parse_cron(*j.schedule);
      if (auto* s = std::get_if<leader_core::CronSchedule>(&parsed))
        if (auto at = leader_core::next_fire(*s, std::chrono::sys_seconds{std::chrono::seconds{page->now_unix}},
                                             std::string_view(j.time_zone)))
          next = at->time_since_epoch().count();
    }
    item["next_fire_unix"] = next;
    // A paused job's slots are not due: its window says what the ledger has.
    if (auto* cadence = item.if_contains("cadence"); cadence && cadence->is_object() && j.schedule && !j.paused)
      add_due_slots(cadence->as_object(), *j.schedule, j.time_zone);
    items.push_back(std::move(item));
  }
  if (only) return ok_json(items.at(0));
  return ok_json(json::object{
      {"items", items}, {"next_cursor", page->next_cursor ? json::value(*page->next_cursor) : json::value(nullptr)}});
}

namespace {

/// One sentence for `baton ctl why`: what the ledger, the run and the job
/// say about one slot, most specific first.
std::string explain_slot(const json::object& known, const std::string& slot_text) {
  const json::value& run = known.at("run");
  if (run.is_object()) {
    const auto& r = run.as_object();
    return "run " + std::to_string(r.at("id").as_int64()) + " was created for the slot " + slot_text + " (epoch " +
           std::to_string(r.at("leader_epoch").as_int64()) + "); it is " + std::string(r.at("state").as_string()) + ".";
  }
  for (const auto& d : known.at("decisions").as_array()) {
    const auto& o = d.as_object();
    if (o.at("decision").as_string() != "skipped") continue;
    const auto reason = o.at("reason").is_string() ? std::string(o.at("reason").as_string()) : "?";
    const auto& details = o.at("details").as_object();
    std::string why = reason == "catch_up_limit"      ? "it was older than the catch-up limit of missed slots"
                      : reason == "starting_deadline" ? "it could not start before the job's starting deadline"
                                                      : "the misfire policy does not run missed slots like it";
    std::string cause;
    if (auto* g = details.if_contains("gap_cause"); g && g->is_string())
      cause = g->as_string() == "paused" ? " The job was paused over it." : " No leader planned it in time.";
    std::string policy;
    if (auto* p = details.if_contains("policy"); p && p->is_string())
      policy = " (misfire_policy " + std::string(p->as_string()) + ")";
    return "the slot " + slot_text + " was given up by epoch " + std::to_string(o.at("epoch").as_int64()) + ": " + why +
           policy + "." + cause;
  }
  const json::value& cursor = known.at("cron_cursor_unix");
  if (known.at("paused").as_bool()) return "the job is paused: its slots are not planned until it is resumed.";
  if (!known.at("live").as_bool()) return "the job is not live (live: false): its slots are not planned.";
  if (cursor.is_null()) return "no slot of this job has been planned yet.";
  return "nothing is recorded for the slot " + slot_text +
         ": it is after the newest slot planned, or before the ledger began (or was pruned).";
}

}  // namespace

HttpResponse AdminApi::why(const ApiCall& c) {
  const std::string& name = c.param("name");
  if (!valid_name(name)) return bad_name("job name", name);
  auto job = with_reads([&](auto& s) { return s.job_definition(name); });
  if (!job) return db_error(job.error());
  if (!*job) return error(404, "not_found", "no job " + json_quote(name));
  auto at_param = c.params.find("at");
  if (at_param == c.params.end())
    return error(400, "bad_request", "query parameter at is required (ISO 8601, e.g. 2026-03-29T01:30:00Z)");
  const auto& def = (*job)->job;
  if (!def.schedule) return error(409, "conflict", "job " + json_quote(name) + " has no schedule: it runs on triggers");
  auto zone_or = leader_core::CronZone::locate(def.time_zone);
  const leader_core::CronZone zone = std::holds_alternative<leader_core::CronZone>(zone_or)
                                         ? std::get<leader_core::CronZone>(zone_or)
                                         : leader_core::CronZone{};
  auto at = leader_core::parse_iso8601(at_param->second, zone);
  if (auto* e = std::get_if<std::string>(&at)) return error(400, "bad_request", "at: " + *e);
  auto parsed = leader_core::parse_cron(*def.schedule);
  auto* schedule = std::get_if<leader_core::CronSchedule>(&parsed);
  if (!schedule) return error(409, "conflict", "job " + json_quote(name) + " has an invalid schedule");
  const auto at_time = std::get<std::chrono::sys_seconds>(at);
  const auto slot = leader_core::next_fire(*schedule, at_time - std::chrono::seconds{1}, zone);
  if (!slot) return error(404, "not_found", "the schedule " + json_quote(*def.schedule) + " never fires after at");
  const std::int64_t slot_unix = slot->time_since_epoch().count();
  auto known = with_reads([&](auto& s) { return s.slot_decisions(name, slot_unix); });
  if (!known) return db_error(known.error());
  if (!*known) return error(404, "not_found", "no job " + json_quote(name));
  json::object out = json::parse(**known).as_object();
  const std::string slot_text = leader_core::format_iso8601(*slot, zone);
  out["explanation"] = explain_slot(out, slot_text);
  out["job"] = name;
  out["schedule"] = *def.schedule;
  out["time_zone"] = def.time_zone;
  out["at"] = leader_core::format_iso8601(at_time, zone);
  out["slot"] = slot_text;
  out["slot_unix"] = slot_unix;
  out["is_slot"] = *slot == at_time;
  return ok_json(out);
}

HttpResponse AdminApi::job_stats(const ApiCall& c) {
  const std::string& name = c.param("name");
  if (!valid_name(name)) return bad_name("job name", name);
  auto stats = with_reads([&](auto& s) { return s.job_stats(name); });
  if (!stats) return db_error(stats.error());
  if (!*stats) return error(404, "not_found", "no job " + json_quote(name));
  return ok_json(json::parse(**stats));
}

HttpResponse AdminApi::job_document(const ApiCall& c) {
  const std::string& name = c.param("name");
  if (!valid_name(name)) return bad_name("job name", name);
  auto stored = with_reads([&](auto& s) { return s.job_definition(name); });
  if (!stored) return db_error(stored.error());
  if (!*stored) return error(404, "not_found", "no job " + json_quote(name));
  return ok_json(admin::job_document((*stored)->job));
}

HttpResponse AdminApi::put_job(const ApiCall& c, bool create_only) {
  std::string name;
  if (!create_only) {
    name = c.param("name");
    if (!valid_name(name)) return bad_name("job name", name);
  }
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto job = parse_job_document(c.request.body, "body", name);
  if (!job) return error(400, "invalid_job", job.error().message);
  if (!valid_name(job->name)) return bad_name("job name", job->name);
  if (auto denied = find_denied(json::parse(job->parameters_json), denylist_, "parameters"))
    return error(400, "invalid_job", *denied);
  std::optional<std::int64_t> version;
  if (auto bad = int_param(c.params, "version", 1, INT64_MAX, version)) return error(400, "bad_request", *bad);
  auto dry = text_param(c.params, "dry_run");
  if (dry && *dry != "true" && *dry != "false")
    return error(400, "bad_request", "query parameter 'dry_run' must be true or false");

  auto stored = with_store([&](auto& s) { return s.job_definition(job->name); });
  if (!stored) return db_error(stored.error());
  if (create_only && *stored)
    return error(409, "conflict", "job " + json_quote(job->name) + " exists: PUT /api/v1/jobs/{name} replaces it");
  if (version && !*stored) return error(404, "not_found", "no job " + json_quote(job->name) + " to update");
  std::vector<std::string> changes;
  if (*stored) changes = job_changes((*stored)->job, *job);
  const char* action = !*stored ? "create" : changes.empty() ? "unchanged" : "update";
  json::array changed;
  for (const auto& f : changes) changed.push_back(json::value(f));
  if ((dry && *dry == "true") || std::string(action) == "unchanged")
    return ok_json(json::object{{"job", job->name},
                                {"action", action},
                                {"changes", changed},
                                {"version", *stored ? json::value((*stored)->version) : json::value(nullptr)},
                                {"dry_run", dry && *dry == "true"}});
  auto r = with_store([&](auto& s) {
    return *stored ? s.update_job(c.actor(), store::JobWrite{*job, version}) : s.create_job(c.actor(), *job);
  });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(
      json::object{{"job", job->name}, {"action", action}, {"changes", changed}, {"definition", json::parse(r->json)}},
      *stored ? 200 : 201);
}

HttpResponse AdminApi::delete_job(const ApiCall& c) {
  const auto& name = c.param("name");
  if (!valid_name(name)) return bad_name("job name", name);
  std::optional<std::int64_t> version;
  if (auto bad = int_param(c.params, "version", 1, INT64_MAX, version)) return error(400, "bad_request", *bad);
  auto r = with_store([&](auto& s) { return s.delete_job(c.actor(), name, version); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(json::object{{"job", name}, {"deleted", true}, {"definition", json::parse(r->json)}});
}

HttpResponse AdminApi::set_paused(const ApiCall& c, bool paused) {
  const auto& name = c.param("name");
  if (!valid_name(name)) return bad_name("job name", name);
  auto r = with_store([&](auto& s) { return s.set_job_paused(c.actor(), name, paused); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(json::parse(r->json));
}

namespace {

/// A trigger's body as the single trigger and each item of a batch take it:
/// the run's payload ({"parameters": {...}}, its names and values checked
/// against the denylist) and its options. Keys in `also` are the caller's
/// (a batch item's job and idempotency_key) and are left out.
struct TriggerBody {
  std::optional<std::string> payload;
  store::TriggerOptions options;
};
std::variant<std::string, TriggerBody> trigger_body(json::object o, const std::vector<std::string>& denylist,
                                                    std::initializer_list<std::string_view> also) {
  TriggerBody out;
  for (const auto& kv : o) {
    const std::string_view k = kv.key();
    if (k != "parameters" && k != "run_at" && k != "priority" && k != "timeout_ms" &&
        std::find(also.begin(), also.end(), k) == also.end())
      return "unknown key " + json_quote(std::string(k).substr(0, 64)) +
             " (a trigger takes {\"parameters\": {...}, \"run_at\": \"2026-12-01T09:00:00Z\", \"priority\": -5, "
             "\"timeout_ms\": 60000})";
  }
  for (auto k : also) o.erase(k);
  if (auto* at = o.if_contains("run_at")) {
    if (!at->is_string()) return "'run_at' must be an ISO 8601 time, e.g. 2026-12-01T09:00:00Z";
    auto parsed = leader_core::parse_iso8601(std::string(at->as_string()), leader_core::CronZone{});
    if (auto* e = std::get_if<std::string>(&parsed)) return "run_at: " + *e;
    const auto when = std::get<std::chrono::sys_seconds>(parsed).time_since_epoch().count();
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (when > now + 366LL * 24 * 3600) return "run_at: at most a year ahead (a schedule is for what recurs)";
    out.options.run_at = when;
    o.erase("run_at");  // not a parameter: the payload's keys are
  }
  // The bounds the job sets are the database's to judge (in the statement
  // that inserts); here only the shape.
  if (auto* p = o.if_contains("priority")) {
    if (!p->is_int64() || p->as_int64() < -1000 || p->as_int64() > 1000)
      return "'priority' must be an integer from -1000 to 1000 (at most the job's own priority)";
    out.options.priority = static_cast<int>(p->as_int64());
    o.erase("priority");
  }
  if (auto* t = o.if_contains("timeout_ms")) {
    if (!t->is_int64() || t->as_int64() <= 0)
      return "'timeout_ms' must be a positive integer of milliseconds (at most the job's own timeout)";
    out.options.timeout_ms = t->as_int64();
    o.erase("timeout_ms");
  }
  if (auto* p = o.if_contains("parameters")) {
    if (!p->is_object()) return "'parameters' must be a JSON object of names to values";
    if (auto denied = find_denied(*p, denylist, "parameters")) return *denied;
  }
  out.payload = json::serialize(o);
  return out;
}

}  // namespace

HttpResponse AdminApi::trigger(const ApiCall& c) {
  const auto& job = c.param("name");
  if (!valid_name(job)) return bad_name("job name", job);
  std::optional<std::string> key;
  if (auto k = c.request.headers.find("idempotency-key"); k != c.request.headers.end()) {
    if (k->second.empty() || k->second.size() > 200)
      return error(400, "bad_request", "Idempotency-Key must be 1-200 characters");
    key = k->second;
  }
  // An optional body: {"parameters": {...}}, kept as the run's payload,
  // "run_at" (ISO 8601; without an offset, UTC): a one-off at that time,
  // and the run's own "priority" and "timeout_ms".
  TriggerBody parsed;
  if (!c.request.body.empty()) {
    auto body = body_object(c.request);
    if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
    auto t = trigger_body(std::get<json::object>(body), denylist_, {});
    if (auto* why = std::get_if<std::string>(&t)) return error(400, "bad_request", *why);
    parsed = std::get<TriggerBody>(std::move(t));
  }
  auto created = with_store([&](auto& s) { return s.trigger(c.actor(), job, key, parsed.payload, parsed.options); });
  if (!created) {
    if (created.error().code == Errc::bad_input) return error(404, "unknown_job", created.error().message);
    return db_error(created.error());
  }
  if (created->outcome == store::WriteOutcome::fenced) return error(503, "not_leader", "this node was superseded");
  if (created->parameters_refused) return error(400, "invalid_parameters", *created->parameters_refused);
  if (created->key_refused) return error(409, "idempotency_key_conflict", *created->key_refused);
  if (created->outcome == store::WriteOutcome::conflict) {
    // The key names an earlier submission (unfinished, or finished within
    // the remembered window): its run, so a client that lost the first
    // answer learns the run it created (docs/operations.md).
    json::object out{
        {"job", job},
        {"idempotency_key", *key},
        {"created", false},
        {"message", "this Idempotency-Key already names a run (unfinished, or finished in the last 24 hours)"}};
    if (created->earlier) out["run_id"] = created->earlier->value;
    return ok_json(out);
  }
  // Hand the run to the leader's dispatcher now, as the insert returned it:
  // it is assigned without waiting for the dispatch period or reading it
  // back (docs/performance.md, trigger-to-start).
  if (ports_.runs_created) {
    std::vector<store::DueRun> due;
    if (created->due) due.push_back(std::move(*created->due));
    ports_.runs_created(std::move(due));
  }
  json::object out{{"job", job}, {"run_id", created->run.value}, {"created", true}};
  if (parsed.options.run_at)
    out["run_at"] = leader_core::format_iso8601(std::chrono::sys_seconds{std::chrono::seconds{*parsed.options.run_at}},
                                                leader_core::CronZone{});
  return ok_json(out, 201);
}

HttpResponse AdminApi::trigger_batch(const ApiCall& c) {
  // {"runs": [{"job", "idempotency_key", "parameters", "run_at", "priority",
  // "timeout_ms"}, ...]}: every run, or (one refused) none.
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  for (const auto& kv : o)
    if (kv.key() != "runs")
      return error(
          400, "bad_request",
          "unknown key " + json_quote(std::string(kv.key()).substr(0, 64)) + " (a batch is {\"runs\": [...]})");
  auto* runs = o.if_contains("runs");
  if (!runs || !runs->is_array() || runs->as_array().empty() || runs->as_array().size() > trigger_batch_max)
    return error(400, "bad_request",
                 "'runs' must be an array of 1-" + std::to_string(trigger_batch_max) +
                     " runs, each {\"job\": NAME, \"idempotency_key\": K, \"parameters\": {...}, ...}");
  std::vector<store::TriggerItem> items;
  for (std::size_t i = 0; i < runs->as_array().size(); ++i) {
    const auto& v = runs->as_array()[i];
    const std::string where = "runs[" + std::to_string(i) + "]";
    if (!v.is_object()) return error(400, "bad_request", where + " must be an object");
    store::TriggerItem item;
    const auto* job = v.as_object().if_contains("job");
    if (!job || !job->is_string() || !valid_name(std::string(job->as_string())))
      return error(400, "bad_request", where + ": 'job' must be a job's name");
    item.job = std::string(job->as_string());
    if (const auto* k = v.as_object().if_contains("idempotency_key")) {
      if (!k->is_string() || k->as_string().empty() || k->as_string().size() > 200)
        return error(400, "bad_request", where + ": 'idempotency_key' must be 1-200 characters");
      item.idempotency_key = std::string(k->as_string());
    }
    auto t = trigger_body(v.as_object(), denylist_, {"job", "idempotency_key"});
    if (auto* why = std::get_if<std::string>(&t)) return error(400, "bad_request", where + ": " + *why);
    auto parsed = std::get<TriggerBody>(std::move(t));
    item.payload_json = std::move(parsed.payload);
    item.options = parsed.options;
    items.push_back(std::move(item));
  }
  auto r = with_store([&](auto& s) { return s.trigger_batch(c.actor(), items); });
  if (!r) return db_error(r.error());
  if (r->current_epoch != c.actor().epoch) return error(503, "not_leader", "this node was superseded");
  for (std::size_t i = 0; i < r->items.size(); ++i)
    if (r->items[i].refused) {
      const bool unknown = r->items[i].refused->rfind("unknown job ", 0) == 0;
      const bool key = r->items[i].refused->starts_with(store::key_refusal_prefix);
      return error(unknown ? 404
                   : key   ? 409
                           : 400,
                   unknown ? "unknown_job"
                   : key   ? "idempotency_key_conflict"
                           : "invalid_parameters",
                   "runs[" + std::to_string(i) + "] (job " + json_quote(items[i].job) + "): " + *r->items[i].refused +
                       " (nothing was triggered)");
    }
  json::array out;
  bool any = false;
  for (std::size_t i = 0; i < r->items.size(); ++i) {
    const auto& it = r->items[i];
    json::object one{{"job", items[i].job}, {"created", it.created.has_value()}};
    if (items[i].idempotency_key) one["idempotency_key"] = *items[i].idempotency_key;
    if (it.created) one["run_id"] = it.created->value;
    if (it.existing) one["run_id"] = it.existing->value;
    any = any || it.created.has_value();
    out.push_back(std::move(one));
  }
  if (any && ports_.runs_created) ports_.runs_created({});
  return ok_json(json::object{{"runs", out}}, any ? 201 : 200);
}

}  // namespace baton::admin
