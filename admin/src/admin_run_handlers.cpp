// The admin API's handlers of runs and dead letters (the route table is in
// admin_handlers.cpp).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

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

const char* const triage_statuses[] = {"pending", "acknowledged", "replayed", "closed"};

}  // namespace

// --- runs -------------------------------------------------------------------

HttpResponse AdminApi::list_runs(const ApiCall& c) {
  const auto& q = c.params;
  store::RunQuery query;
  query.job = text_param(q, "job");
  query.worker = text_param(q, "worker");
  query.idempotency_key = text_param(q, "idempotency_key");
  query.error_text = text_param(q, "error");
  if (query.error_text && query.error_text->size() > 200)
    return error(400, "bad_request", "query parameter 'error' must be at most 200 characters");
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
  return page_or_error(with_reads([&](auto& s) { return s.list_runs(query); }));
}

HttpResponse AdminApi::run_series(const ApiCall& c) {
  // The dashboard's three windows, each in about a hundred buckets.
  struct Window {
    const char* name;
    int seconds, bucket;
  };
  static constexpr Window windows[] = {{"1h", 3600, 60}, {"24h", 86400, 900}, {"7d", 7 * 86400, 7200}};
  const std::string name = text_param(c.params, "window").value_or("1h");
  const Window* w = nullptr;
  for (const auto& x : windows)
    if (name == x.name) w = &x;
  if (!w)
    return error(400, "bad_request",
                 "query parameter 'window' must be 1h, 24h or 7d, got " + json_quote(name.substr(0, 64)));
  store::SeriesQuery query{w->name, w->seconds, w->bucket, text_param(c.params, "job")};
  if (query.job && !valid_name(*query.job)) return bad_name("job name", *query.job);
  auto series = with_reads([&](auto& s) { return s.run_series(query); });
  if (!series) return db_error(series.error());
  if (!*series) return error(404, "not_found", "no job " + json_quote(*query.job));
  return {200, "application/json", **series, {}};
}

HttpResponse AdminApi::verify_status(const ApiCall& c) {
  std::optional<std::int64_t> limit;
  if (auto bad = int_param(c.params, "limit", 1, 1000, limit)) return error(400, "bad_request", *bad);
  const std::string open = text_param(c.params, "open").value_or("false");
  if (open != "true" && open != "false")
    return error(400, "bad_request",
                 "query parameter 'open' must be true or false, got " + json_quote(open.substr(0, 64)));
  auto r =
      with_reads([&](auto& s) { return s.verify_status_json(static_cast<int>(limit.value_or(50)), open == "true"); });
  if (!r) return db_error(r.error());
  return {200, "application/json", *r, {}};
}

HttpResponse AdminApi::acknowledge_violations(const ApiCall& c) {
  auto body = body_object(c.request);
  if (auto* e = std::get_if<HttpResponse>(&body)) return *e;
  auto& o = std::get<json::object>(body);
  for (const auto& kv : o)
    if (kv.key() != "through_id")
      return error(400, "bad_request",
                   "unknown key " + json_quote(std::string(kv.key()).substr(0, 64)) + " (the body has through_id)");
  auto* through = o.if_contains("through_id");
  if (!through || !through->is_int64() || through->as_int64() < 1)
    return error(400, "bad_request", "'through_id' must be a positive integer (the newest violation acknowledged)");
  const std::int64_t id = through->as_int64();
  auto r = with_store([&](auto& s) { return s.acknowledge_violations(c.actor(), id); });
  if (!r) return db_error(r.error());
  return {200, "application/json", json::serialize(json::object{{"acknowledged", *r}, {"through_id", id}}), {}};
}

HttpResponse AdminApi::show_run(const ApiCall& c) {
  auto id = parse_id(c.param("id"));
  if (!id) return bad_id("run id", c.param("id"));
  auto r = with_reads([&](auto& s) { return s.run_json(RunId{*id}); });
  if (!r) return db_error(r.error());
  if (!*r) return error(404, "not_found", "no run " + std::to_string(*id));
  return {200, "application/json", **r, {}};
}

HttpResponse AdminApi::incident_export(const ApiCall& c) {
  std::optional<std::int64_t> from, to;
  if (auto bad = int_param(c.params, "from", 0, std::int64_t{1} << 40, from)) return error(400, "bad_request", *bad);
  if (auto bad = int_param(c.params, "to", 0, std::int64_t{1} << 40, to)) return error(400, "bad_request", *bad);
  // Unset: the last 15 minutes, by this node's clock.
  if (!to)
    to = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (!from) from = std::max<std::int64_t>(0, *to - 900);
  if (*from > *to) return error(400, "bad_request", "'from' is after 'to'");
  const std::string node = c.node.node_id;
  if (!incident_export_)
    return error(404, "no_journal",
                 "node " + node + " keeps no incident journal (node key incident_journal_dir; docs/assurance.md)");
  // Whole seconds: the window runs to the end of its last second.
  auto journal = incident_export_(*from * 1000, *to * 1000 + 999);
  if (!journal) return error(404, "not_found", "node " + node + ": " + journal.error().message);
  std::int64_t books = 0, lines = 0;
  for (std::size_t at = 0; (at = journal->find('\n', at)) != std::string::npos; ++at) lines++;
  for (std::size_t at = 0; (at = journal->find("{\"k\":\"book\"", at)) != std::string::npos; ++at) books++;
  return ok_json(json::object{{"node", node},
                              {"from", *from},
                              {"to", *to},
                              {"books", books},
                              {"lines", lines},
                              {"journal", std::move(*journal)}});
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

// --- dead letters -----------------------------------------------------------

HttpResponse AdminApi::list_dead_letters(const ApiCall& c, bool one) {
  if (one) {
    auto id = parse_id(c.param("id"));
    if (!id) return bad_id("dead letter id", c.param("id"));
    return one_or_404(with_reads([&](auto& s) { return s.list_dead_letters(1, std::nullopt, std::nullopt, *id); }),
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
      with_reads([&](auto& s) { return s.list_dead_letters(page.limit, page.before_id, status, std::nullopt); }));
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

}  // namespace baton::admin
