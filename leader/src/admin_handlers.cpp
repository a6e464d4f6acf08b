// The routes of /api/v1 and their handlers: parse and check the request,
// call the AdminStore once, answer. Each route's role and whether it must
// run on the leader are in the table (admin_api.h, ApiRoute).
#include <spdlog/spdlog.h>

#include "admin_http.h"
#include "baton/core/json_text.h"
#include "baton/core/run_state.h"
#include "baton/core/utf8.h"
#include "baton/leader/admin_api.h"
#include "baton/leader/job_files.h"
#include "baton/leader_core/cron.h"

namespace baton::leader {

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

const char* const triage_statuses[] = {"pending", "acknowledged", "replayed", "closed"};

HttpResponse bad_id(const std::string& what, const std::string& got) {
  return error(400, "bad_request", what + " must be a positive integer, got " + json_quote(got.substr(0, 64)));
}

HttpResponse bad_name(const std::string& what, const std::string& got) {
  return error(
      400, "bad_request",
      what + " " + json_quote(got.substr(0, 64)) + " is not valid (1-200 characters: letters, digits, '-', '_', '.')");
}

}  // namespace

std::vector<ApiRoute> AdminApi::make_routes() {
  const auto R = Role::read, O = Role::operate, A = Role::admin;
  auto h = [this](HttpResponse (AdminApi::*f)(const ApiCall&)) {
    return [this, f](const ApiCall& c) { return (this->*f)(c); };
  };
  return {
      {"GET",
       "/api/v1/openapi.json",
       "This document: every route of /api/v1.",
       {},
       R,
       false,
       "",
       [this](const ApiCall&) { return openapi(); }},
      // runs
      {"GET",
       "/api/v1/runs",
       "Runs, newest first, filtered; cursor-paginated.",
       {"job", "state", "worker", "idempotency_key", "created_after", "created_before", "limit", "cursor"},
       R,
       false,
       "",
       h(&AdminApi::list_runs)},
      {"GET",
       "/api/v1/runs/{id}",
       "One run: attempts, transitions with the epoch of each, log chunks, dead letter, re-runs.",
       {},
       R,
       false,
       "",
       h(&AdminApi::show_run)},
      {"GET",
       "/api/v1/runs/{id}/output",
       "A run's full output from this node's log archive, a page at a time (works after the run was pruned).",
       {"attempt", "stream", "offset", "limit"},
       R,
       false,
       "",
       h(&AdminApi::run_output)},
      {"POST",
       "/api/v1/runs/{id}/cancel",
       "Cancel a run (a running one through its worker).",
       {},
       O,
       true,
       "",
       h(&AdminApi::cancel)},
      {"POST",
       "/api/v1/runs/{id}/rerun",
       "A new run of the same job and payload as a finished run.",
       {},
       O,
       true,
       "",
       h(&AdminApi::rerun)},
      // jobs
      {"GET",
       "/api/v1/jobs",
       "Job definitions by name: schedule, next fire time, last run, paused.",
       {"limit", "cursor"},
       R,
       false,
       "",
       [this](const ApiCall& c) { return list_jobs(c, false); }},
      {"POST",
       "/api/v1/jobs",
       "Create a job (409 if the name is taken).",
       {},
       A,
       false,
       "a job definition: the keys of an entry of a job file (docs/scheduling.md)",
       [this](const ApiCall& c) { return put_job(c, true); }},
      {"GET",
       "/api/v1/jobs/{name}",
       "One job definition.",
       {},
       R,
       false,
       "",
       [this](const ApiCall& c) { return list_jobs(c, true); }},
      {"GET",
       "/api/v1/jobs/{name}/why",
       "Why a cron slot of the job did or did not run: the slot at or after `at` (ISO 8601, or a wall clock in the "
       "job's zone), its run and its decision-ledger entries, and an explanation.",
       {"at"},
       R,
       false,
       "",
       h(&AdminApi::why)},
      {"PUT",
       "/api/v1/jobs/{name}",
       "Create or replace a job; with `version`, only if it is still at that version (409 otherwise); with "
       "`dry_run=true`, only say what would change.",
       {"version", "dry_run"},
       A,
       false,
       "a job definition: the keys of an entry of a job file (docs/scheduling.md)",
       [this](const ApiCall& c) { return put_job(c, false); }},
      {"DELETE",
       "/api/v1/jobs/{name}",
       "Delete a job (soft: its runs and history stay; it creates no more runs).",
       {"version"},
       A,
       false,
       "",
       h(&AdminApi::delete_job)},
      {"POST",
       "/api/v1/jobs/{name}/trigger",
       "Create a run of a job now (optional Idempotency-Key header).",
       {},
       O,
       true,
       "optional: {\"parameters\": {...}} (kept as the run's payload; only parameters the job declares, "
       "as its rules allow: else 400 invalid_parameters)",
       h(&AdminApi::trigger)},
      {"POST",
       "/api/v1/jobs/{name}/pause",
       "Pause a job: its schedule creates no runs until resumed.",
       {},
       O,
       false,
       "",
       [this](const ApiCall& c) { return set_paused(c, true); }},
      {"POST",
       "/api/v1/jobs/{name}/resume",
       "Resume a paused job (missed slots follow its misfire policy).",
       {},
       O,
       false,
       "",
       [this](const ApiCall& c) { return set_paused(c, false); }},
      // workers
      {"GET",
       "/api/v1/workers",
       "Workers by id: state, operator hold, labels, capacity, in flight, last heartbeat.",
       {"limit", "cursor"},
       R,
       false,
       "",
       [this](const ApiCall& c) { return list_workers(c, false); }},
      {"GET",
       "/api/v1/workers/{worker}",
       "One worker with the runs it holds.",
       {},
       R,
       false,
       "",
       [this](const ApiCall& c) { return list_workers(c, true); }},
      {"POST",
       "/api/v1/workers/{worker}/drain",
       "Drain a worker: it finishes its in-flight runs and takes no new ones.",
       {},
       O,
       false,
       "",
       [this](const ApiCall& c) { return hold_worker(c, "draining"); }},
      {"POST",
       "/api/v1/workers/{worker}/resume",
       "Take a drained or evicted worker back into service.",
       {},
       O,
       false,
       "",
       [this](const ApiCall& c) { return hold_worker(c, "active"); }},
      {"POST",
       "/api/v1/workers/{worker}/evict",
       "Disconnect a worker and refuse it until resumed; its running attempts are retried elsewhere after the "
       "continuation deadline.",
       {},
       O,
       false,
       "",
       [this](const ApiCall& c) { return hold_worker(c, "evicted"); }},
      // worker identity (worker_identity_handlers.cpp)
      {"POST",
       "/api/v1/workers/{worker}/enrollments",
       "Grant a worker id its labels and capacity; the answer holds a bootstrap token for it (single use, "
       "expiring), shown this once.",
       {},
       A,
       false,
       "{\"capacity\": N, \"labels\": {\"k\": \"v\"}, \"ttl_seconds\": S} (labels and ttl_seconds optional; "
       "ttl 60-2592000, default 3600)",
       h(&AdminApi::create_worker_enrollment)},
      {"POST",
       "/api/v1/workers/{worker}/rotate",
       "A bootstrap token with the grant of the worker's live credential; when the worker enrolls with it, the "
       "old credential is revoked and its sessions closed.",
       {},
       A,
       false,
       "{\"ttl_seconds\": S} (optional)",
       h(&AdminApi::rotate_worker_credential)},
      {"POST",
       "/api/v1/workers/{worker}/revoke",
       "Revoke the worker's credential and unused bootstrap tokens; every node closes its sessions within seconds "
       "and refuses its hello.",
       {},
       A,
       false,
       "",
       h(&AdminApi::revoke_worker_credentials)},
      {"GET",
       "/api/v1/worker-credentials",
       "Worker credentials (never the credential): worker, granted labels and capacity, created, last used, "
       "revoked; and bootstrap tokens not yet used.",
       {"limit", "cursor"},
       A,
       false,
       "",
       h(&AdminApi::list_worker_credentials)},
      {"POST",
       "/api/v1/enroll",
       "A worker trades its bootstrap token (Authorization: Bearer) for its own credential; no API token.",
       {},
       Role::anyone,
       false,
       "{\"worker_id\": \"...\"}",
       h(&AdminApi::enroll_worker)},
      // dead letters
      {"GET",
       "/api/v1/dead-letters",
       "Dead letters, newest first; filter by triage status.",
       {"status", "limit", "cursor"},
       R,
       false,
       "",
       [this](const ApiCall& c) { return list_dead_letters(c, false); }},
      {"GET",
       "/api/v1/dead-letters/{id}",
       "One dead letter.",
       {},
       R,
       false,
       "",
       [this](const ApiCall& c) { return list_dead_letters(c, true); }},
      {"POST",
       "/api/v1/dead-letters/{id}/triage",
       "Set a dead letter's triage status and notes.",
       {},
       O,
       false,
       "{\"status\": \"pending|acknowledged|replayed|closed\", \"notes\": \"...\"}",
       h(&AdminApi::triage)},
      {"POST",
       "/api/v1/dead-letters/{id}/replay",
       "Replay a dead letter: a new run of its job and payload.",
       {},
       O,
       true,
       "",
       [this](const ApiCall& c) { return replay(c, false); }},
      {"POST",
       "/api/v1/dead-letters/replay",
       "Replay many dead letters (one result each).",
       {},
       O,
       true,
       "{\"ids\": [1, 2, ...]} (at most 500)",
       [this](const ApiCall& c) { return replay(c, true); }},
      // leadership, nodes, audit
      {"GET",
       "/api/v1/epochs",
       "Leadership history, newest first: who led each epoch, when, how it ended.",
       {"limit", "cursor"},
       R,
       false,
       "",
       h(&AdminApi::list_epochs)},
      {"GET",
       "/api/v1/nodes",
       "Coordinator nodes: role, endpoint, last heartbeat, whether it leads.",
       {"limit", "cursor"},
       R,
       false,
       "",
       h(&AdminApi::list_nodes)},
      {"GET",
       "/api/v1/audit",
       "The audit log of admin mutations, newest first; filter by subject (job:NAME).",
       {"subject", "limit", "cursor"},
       R,
       false,
       "",
       h(&AdminApi::list_audit)},
      // events
      {"GET",
       "/api/v1/events",
       "Events newest first, with the runs made from each; filter by kind.",
       {"kind", "limit", "cursor"},
       R,
       false,
       "",
       h(&AdminApi::list_events)},
      {"POST",
       "/api/v1/events",
       "Record an event: each job subscribed to its kind (on_events) gets one run of it; a dedupe_key already used "
       "records nothing (200, created false).",
       {},
       O,
       false,
       "{\"kind\": \"...\", \"payload\": {...}, \"dedupe_key\": \"...\"} (payload and dedupe_key optional)",
       h(&AdminApi::post_event)},
      // settings and tokens
      {"GET",
       "/api/v1/settings",
       "Every setting: value, when and by whom it was set, what it does.",
       {},
       R,
       false,
       "",
       h(&AdminApi::get_settings)},
      {"PUT",
       "/api/v1/settings/{key}",
       "Set a setting; nodes apply it without a restart.",
       {},
       A,
       false,
       "{\"value\": ...}",
       h(&AdminApi::set_setting)},
      {"GET",
       "/api/v1/tokens",
       "API tokens (never the token itself), newest first.",
       {"limit", "cursor"},
       A,
       false,
       "",
       h(&AdminApi::list_tokens)},
      {"POST",
       "/api/v1/tokens",
       "Create a token; the answer holds the token, shown this once.",
       {},
       A,
       false,
       "{\"name\": \"...\", \"role\": \"read|operate|admin\", \"ttl_seconds\": S} (ttl_seconds optional: "
       "60 s to ten years; without it the token does not expire)",
       h(&AdminApi::create_token)},
      {"POST",
       "/api/v1/tokens/{id}/revoke",
       "Revoke a token (within 5 s on every node).",
       {},
       A,
       false,
       "",
       h(&AdminApi::revoke_token)},
  };
}

// --- runs -------------------------------------------------------------------

HttpResponse AdminApi::list_runs(const ApiCall& c) {
  const auto& q = c.params;
  store::RunQuery query;
  query.job = text_param(q, "job");
  query.worker = text_param(q, "worker");
  query.idempotency_key = text_param(q, "idempotency_key");
  if (auto state = text_param(q, "state")) {
    if (!parse_run_state(*state))
      return error(400, "bad_request",
                   "query parameter 'state' must be a run state (PENDING, ASSIGNED, RUNNING, RETRY_WAITING, ORPHANED, "
                   "SUCCEEDED, FAILED, TIMED_OUT, CANCELED), got " +
                       json_quote(state->substr(0, 64)));
    query.state = *state;
  }
  Paging page;
  for (auto bad :
       {paging_of(q, true, page), int_param(q, "created_after", 0, INT64_MAX / 1000000, query.created_after_unix),
        int_param(q, "created_before", 0, INT64_MAX / 1000000, query.created_before_unix)})
    if (bad) return error(400, "bad_request", *bad);
  query.limit = page.limit;
  query.before_id = page.before_id;
  return page_or_error(with_store([&](auto& s) { return s.list_runs(query); }));
}

HttpResponse AdminApi::show_run(const ApiCall& c) {
  auto id = parse_id(c.param("id"));
  if (!id) return bad_id("run id", c.param("id"));
  auto r = with_store([&](auto& s) { return s.run_json(RunId{*id}); });
  if (!r) return db_error(r.error());
  if (!*r) return error(404, "not_found", "no run " + std::to_string(*id));
  return {200, "application/json", **r, {}};
}

HttpResponse AdminApi::run_output(const ApiCall& c) {
  auto id = parse_id(c.param("id"));
  if (!id) return bad_id("run id", c.param("id"));
  std::optional<std::int64_t> attempt, offset, limit;
  if (auto bad = int_param(c.params, "attempt", 1, 1000, attempt)) return error(400, "bad_request", *bad);
  if (auto bad = int_param(c.params, "offset", 0, std::int64_t{1} << 50, offset))
    return error(400, "bad_request", *bad);
  if (auto bad = int_param(c.params, "limit", 1, 8 << 20, limit)) return error(400, "bad_request", *bad);
  const std::string stream = text_param(c.params, "stream").value_or("stdout");
  if (stream != "stdout" && stream != "stderr")
    return error(400, "bad_request", "'stream' must be stdout or stderr, got " + json_quote(stream.substr(0, 64)));
  const std::string node = c.node.node_id;
  if (!archive_)
    return error(404, "no_archive",
                 "node " + node +
                     " has no log archive (node key log_archive_dir); the run's log in the database holds the "
                     "first runtime.output_db_bytes of each stream: GET /api/v1/runs/" +
                     std::to_string(*id));
  const auto streams = archive_->streams(*id);
  if (streams.empty())
    return error(404, "not_found",
                 "node " + node + "'s log archive holds no output of run " + std::to_string(*id) +
                     " (expired, never streamed, or written by another node: the leader that received the output "
                     "writes it; give every node the same shared log_archive_dir)");
  const int which = attempt ? static_cast<int>(*attempt) : streams.back().attempt;
  auto slice =
      archive_->read(*id, which, stream, offset.value_or(0), static_cast<std::size_t>(limit.value_or(1 << 20)));
  if (!slice)
    return error(404, "not_found",
                 "node " + node + "'s log archive holds no " + stream + " of attempt " + std::to_string(which) +
                     " of run " + std::to_string(*id));
  json::array held;
  for (const auto& s : streams)
    held.push_back(json::object{{"attempt", s.attempt}, {"stream", s.stream}, {"size", s.size}});
  const std::int64_t next = slice->offset + static_cast<std::int64_t>(slice->data.size());
  return ok_json(json::object{{"run_id", *id},
                              {"attempt", which},
                              {"stream", stream},
                              {"offset", slice->offset},
                              {"size", slice->size},
                              {"next_offset", next},
                              {"complete", next >= slice->size},
                              {"node", node},
                              {"data", to_valid_utf8(slice->data)},
                              {"streams", std::move(held)}});
}

HttpResponse AdminApi::cancel(const ApiCall& c) {
  auto id = parse_id(c.param("id"));
  if (!id) return bad_id("run id", c.param("id"));
  auto state = with_store([&](auto& s) { return s.run_state(RunId{*id}); });
  if (!state) return db_error(state.error());
  if (!*state) return error(404, "not_found", "no run " + std::to_string(*id));
  if (auto parsed = parse_run_state(**state); parsed && is_terminal(*parsed))
    return error(409, "conflict", "run " + std::to_string(*id) + " is " + **state + ": nothing to cancel");
  // The cancel itself is the control loop's fenced write; its record here
  // comes first, so no cancel ever happens unrecorded.
  if (auto a = with_store([&](auto& s) {
        return s.audit(c.actor(), "run.cancel", "run:" + std::to_string(*id),
                       "{\"reason\":\"canceled through the API\"}");
      });
      !a)
    return db_error(a.error());
  if (!ports_.cancel(*id, "canceled through the API by " + c.who.name))
    return error(503, "not_leader", "this node is not leading now");
  return ok_json(json::object{{"run_id", *id}, {"status", "cancel requested"}}, 202);
}

HttpResponse AdminApi::rerun(const ApiCall& c) {
  auto id = parse_id(c.param("id"));
  if (!id) return bad_id("run id", c.param("id"));
  auto r = with_store([&](auto& s) { return s.rerun(c.actor(), RunId{*id}); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  if (ports_.runs_created) ports_.runs_created({});
  return ok_json(json::parse(r->json), 201);
}

// --- jobs -------------------------------------------------------------------

HttpResponse AdminApi::list_jobs(const ApiCall& c, bool one) {
  Paging paging;
  std::optional<std::string> only;
  if (one) {
    if (!valid_name(c.param("name"))) return bad_name("job name", c.param("name"));
    only = c.param("name");
  } else if (auto bad = paging_of(c.params, false, paging)) {
    return error(400, "bad_request", *bad);
  }
  auto page = with_store([&](auto& s) { return s.list_jobs(paging.limit, paging.after_name, only); });
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
  auto job = with_store([&](auto& s) { return s.job_definition(name); });
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
  auto known = with_store([&](auto& s) { return s.slot_decisions(name, slot_unix); });
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

HttpResponse AdminApi::trigger(const ApiCall& c) {
  const auto& job = c.param("name");
  if (!valid_name(job)) return bad_name("job name", job);
  std::optional<std::string> key;
  if (auto k = c.request.headers.find("idempotency-key"); k != c.request.headers.end()) {
    if (k->second.empty() || k->second.size() > 200)
      return error(400, "bad_request", "Idempotency-Key must be 1-200 characters");
    key = k->second;
  }
  // An optional body: {"parameters": {...}}, kept as the run's payload.
  std::optional<std::string> payload;
  if (!c.request.body.empty()) {
    auto body = body_object(c.request);
    if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
    auto& o = std::get<json::object>(body);
    for (const auto& kv : o)
      if (kv.key() != "parameters")
        return error(400, "bad_request",
                     "unknown key " + json_quote(std::string(kv.key()).substr(0, 64)) +
                         " (a trigger takes {\"parameters\": {...}})");
    if (auto* p = o.if_contains("parameters"); p && !p->is_object())
      return error(400, "bad_request", "'parameters' must be a JSON object of names to values");
    if (auto* p = o.if_contains("parameters"))
      if (auto denied = find_denied(*p, denylist_, "parameters")) return error(400, "bad_request", *denied);
    payload = json::serialize(o);
  }
  auto created = with_store([&](auto& s) { return s.trigger(c.actor(), job, key, payload); });
  if (!created) {
    if (created.error().code == Errc::bad_input) return error(404, "unknown_job", created.error().message);
    return db_error(created.error());
  }
  if (created->outcome == store::WriteOutcome::fenced) return error(503, "not_leader", "this node was superseded");
  if (created->parameters_refused) return error(400, "invalid_parameters", *created->parameters_refused);
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
  return ok_json(json::object{{"job", job}, {"run_id", created->run.value}, {"created", true}}, 201);
}

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

// --- dead letters -----------------------------------------------------------

HttpResponse AdminApi::list_dead_letters(const ApiCall& c, bool one) {
  if (one) {
    auto id = parse_id(c.param("id"));
    if (!id) return bad_id("dead letter id", c.param("id"));
    return one_or_404(with_store([&](auto& s) { return s.list_dead_letters(1, std::nullopt, std::nullopt, *id); }),
                      "dead letter " + std::to_string(*id));
  }
  Paging page;
  if (auto bad = paging_of(c.params, true, page)) return error(400, "bad_request", *bad);
  auto status = text_param(c.params, "status");
  if (status && std::find(std::begin(triage_statuses), std::end(triage_statuses), *status) == std::end(triage_statuses))
    return error(400, "bad_request",
                 "query parameter 'status' must be pending, acknowledged, replayed or closed, got " +
                     json_quote(status->substr(0, 64)));
  return page_or_error(
      with_store([&](auto& s) { return s.list_dead_letters(page.limit, page.before_id, status, std::nullopt); }));
}

HttpResponse AdminApi::triage(const ApiCall& c) {
  auto id = parse_id(c.param("id"));
  if (!id) return bad_id("dead letter id", c.param("id"));
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  for (const auto& kv : o)
    if (kv.key() != "status" && kv.key() != "notes")
      return error(
          400, "bad_request",
          "unknown key " + json_quote(std::string(kv.key()).substr(0, 64)) + " (a triage takes status and notes)");
  auto* status = o.if_contains("status");
  if (!status || !status->is_string() ||
      std::find(std::begin(triage_statuses), std::end(triage_statuses), std::string(status->as_string())) ==
          std::end(triage_statuses))
    return error(400, "bad_request", "'status' must be one of pending, acknowledged, replayed, closed");
  std::optional<std::string> notes;
  if (auto* n = o.if_contains("notes")) {
    if (!n->is_string() || n->as_string().size() > 10000)
      return error(400, "bad_request", "'notes' must be a string of at most 10000 characters");
    notes = std::string(n->as_string());
  }
  auto r = with_store([&](auto& s) { return s.triage(c.actor(), *id, std::string(status->as_string()), notes); });
  if (!r) return db_error(r.error());
  if (r->outcome != store::AdminOutcome::applied) return refused(*r);
  return ok_json(json::parse(r->json));
}

HttpResponse AdminApi::replay(const ApiCall& c, bool many) {
  std::vector<std::int64_t> ids;
  if (!many) {
    auto id = parse_id(c.param("id"));
    if (!id) return bad_id("dead letter id", c.param("id"));
    ids.push_back(*id);
  } else {
    auto body = body_object(c.request);
    if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
    auto& o = std::get<json::object>(body);
    auto* list = o.if_contains("ids");
    if (o.size() != 1 || !list || !list->is_array() || list->as_array().empty() || list->as_array().size() > 500)
      return error(400, "bad_request", "the body must be {\"ids\": [...]} with 1 to 500 dead letter ids");
    for (const auto& v : list->as_array()) {
      if (!v.is_int64() || v.as_int64() <= 0)
        return error(400, "bad_request", "'ids' must hold positive integers, got " + json::serialize(v).substr(0, 64));
      ids.push_back(v.as_int64());
    }
  }
  auto r = with_store([&](auto& s) { return s.replay(c.actor(), ids); });
  if (!r) return db_error(r.error());
  if (!r->empty() && r->front().outcome == store::AdminOutcome::fenced) return refused(r->front());
  if (!many) {
    if (r->at(0).outcome != store::AdminOutcome::applied) return refused(r->at(0));
    if (ports_.runs_created) ports_.runs_created({});
    return ok_json(json::parse(r->at(0).json), 201);
  }
  json::array results;
  bool any = false;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& one = r->at(i);
    if (one.outcome == store::AdminOutcome::applied) {
      any = true;
      results.push_back(json::parse(one.json));
    } else {
      results.push_back(
          json::object{{"dead_letter_id", ids[i]},
                       {"error", one.outcome == store::AdminOutcome::not_found ? "not_found" : "conflict"},
                       {"message", one.message}});
    }
  }
  if (any && ports_.runs_created) ports_.runs_created({});
  // Some replayed: 200 with a result each. None: the request changed
  // nothing, and says why in the same shape.
  if (!any)
    return ok_json(
        json::object{
            {"code", "not_found"}, {"message", "none of the dead letters could be replayed"}, {"results", results}},
        404);
  return ok_json(json::object{{"results", results}});
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

}  // namespace baton::leader
