#include "baton/leader/admin_api.h"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <charconv>
#include <set>

#include "baton/core/run_state.h"
#include "baton/leader_core/cron.h"

namespace baton::leader {

namespace json = boost::json;

namespace {

HttpResponse error(int status, const std::string& code, const std::string& message) {
  return {status, "application/json", json::serialize(json::object{{"code", code}, {"message", message}}), {}};
}

HttpResponse ok_json(const json::value& v, int status = 200) {
  return {status, "application/json", json::serialize(v), {}};
}

std::optional<std::int64_t> parse_id(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

/// The query parameters of `target`, decoded; an error names what is wrong
/// (malformed, repeated, or not one of `allowed`).
std::optional<std::string> query_of(const std::string& target, const std::vector<std::string>& allowed,
                                    std::map<std::string, std::string>& out) {
  auto u = boost::urls::parse_origin_form(target);
  if (!u) return "the request target is not a valid URL: " + u.error().message();
  for (auto p : u->params()) {
    const std::string key = p.key;
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      return "unknown query parameter '" + key.substr(0, 64) + "' (this route takes: " + names + ")";
    }
    if (!out.emplace(key, std::string(p.value)).second) return "query parameter '" + key + "' given twice";
  }
  return std::nullopt;
}

/// An integer query parameter in [lo, hi], or an error naming it.
std::optional<std::string> int_param(const std::map<std::string, std::string>& q, const std::string& name,
                                     std::int64_t lo, std::int64_t hi, std::optional<std::int64_t>& out) {
  auto it = q.find(name);
  if (it == q.end()) return std::nullopt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc{} || p != it->second.data() + it->second.size() || v < lo || v > hi)
    return "query parameter '" + name + "' must be an integer from " + std::to_string(lo) + " to " +
           std::to_string(hi) + ", got '" + it->second.substr(0, 64) + "'";
  out = v;
  return std::nullopt;
}

std::optional<std::string> text_param(const std::map<std::string, std::string>& q, const std::string& name) {
  auto it = q.find(name);
  if (it == q.end()) return std::nullopt;
  return it->second;
}

/// `{"items": [...], "next_cursor": "..." | null}`.
HttpResponse page_json(const store::Page& p) {
  std::string body = "{\"items\":" + p.items_json + ",\"next_cursor\":" +
                     (p.next_cursor ? json::serialize(json::value(*p.next_cursor)) : std::string("null")) + "}";
  return {200, "application/json", body, {}};
}

constexpr std::int64_t page_max = 500;

/// A list's page: `limit` (1-500, default 50) and its cursor, an id
/// (`numeric`) or a name.
struct Paging {
  int limit = 50;
  std::optional<std::int64_t> before_id;
  std::optional<std::string> after_name;
};
std::optional<std::string> paging_of(const std::map<std::string, std::string>& q, bool numeric, Paging& out) {
  std::optional<std::int64_t> limit;
  if (auto bad = int_param(q, "limit", 1, page_max, limit)) return bad;
  out.limit = static_cast<int>(limit.value_or(50));
  if (numeric) return int_param(q, "cursor", 1, INT64_MAX, out.before_id);
  out.after_name = text_param(q, "cursor");
  return std::nullopt;
}

HttpResponse page_or_error(const Result<store::Page>& page) {
  if (!page) return error(503, "db_unavailable", page.error().message);
  return page_json(*page);
}

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 200) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

}  // namespace

AdminApi::AdminApi(std::function<NodeStatus()> status, store::LeaderStore& store, Metrics& metrics,
                   std::string admin_token, std::function<bool(std::int64_t, const std::string&)> cancel,
                   std::function<void()> run_created)
    : status_(std::move(status)),
      store_(store),
      metrics_(metrics),
      admin_token_(std::move(admin_token)),
      cancel_(std::move(cancel)),
      run_created_(std::move(run_created)) {
  using Params = std::map<std::string, std::string>;
  routes_ = {
      {"GET",
       "/api/v1/openapi.json",
       "This document: every route of /api/v1.",
       {},
       false,
       [this](const HttpRequest&, const Params&) { return openapi(); }},
      {"GET",
       "/api/v1/runs",
       "Runs, newest first, filtered; cursor-paginated.",
       {"job", "state", "worker", "idempotency_key", "created_after", "created_before", "limit", "cursor"},
       false,
       [this](const HttpRequest&, const Params& q) { return list_runs(q); }},
      {"GET",
       "/api/v1/runs/{id}",
       "One run with its attempts and log chunks.",
       {},
       false,
       [this](const HttpRequest&, const Params& p) {
         auto id = parse_id(p.at("id"));
         if (!id) return error(400, "bad_request", "run id must be a positive integer, got '" + p.at("id") + "'");
         return run(*id);
       }},
      {"POST",
       "/api/v1/runs/{id}/cancel",
       "Cancel a run (a running one through its worker).",
       {},
       true,
       [this](const HttpRequest& r, const Params& p) {
         auto id = parse_id(p.at("id"));
         if (!id) return error(400, "bad_request", "run id must be a positive integer, got '" + p.at("id") + "'");
         return this->cancel(*id, r);
       }},
      {"POST",
       "/api/v1/jobs/{name}/trigger",
       "Create a run of a job now (optional Idempotency-Key header).",
       {},
       true,
       [this](const HttpRequest& r, const Params& p) {
         const std::string& name = p.at("name");
         if (!valid_name(name)) return error(400, "bad_request", "job name '" + name.substr(0, 64) + "' is not valid");
         return trigger(name, r, status_());
       }},
      {"GET",
       "/api/v1/jobs",
       "Job definitions by name: schedule, next fire time, last run, paused.",
       {"limit", "cursor"},
       false,
       [this](const HttpRequest&, const Params& q) { return list_jobs(q, std::nullopt); }},
      {"GET",
       "/api/v1/jobs/{name}",
       "One job definition.",
       {},
       false,
       [this](const HttpRequest&, const Params& p) {
         if (!valid_name(p.at("name")))
           return error(400, "bad_request", "job name '" + p.at("name").substr(0, 64) + "' is not valid");
         return list_jobs(p, p.at("name"));
       }},
      {"POST",
       "/api/v1/jobs/{name}/pause",
       "Pause a job: its schedule creates no runs until resumed.",
       {},
       true,
       [this](const HttpRequest&, const Params& p) { return set_paused(p.at("name"), true); }},
      {"POST",
       "/api/v1/jobs/{name}/resume",
       "Resume a paused job (missed slots follow its misfire policy).",
       {},
       true,
       [this](const HttpRequest&, const Params& p) { return set_paused(p.at("name"), false); }},
      {"GET",
       "/api/v1/audit",
       "The audit log of admin mutations, newest first; filter by subject (job:NAME).",
       {"subject", "limit", "cursor"},
       false,
       [this](const HttpRequest&, const Params& q) { return list_audit(q); }},
      {"GET",
       "/api/v1/dead-letters",
       "Dead letters, newest first; filter by triage status.",
       {"status", "limit", "cursor"},
       false,
       [this](const HttpRequest&, const Params& q) { return list_dead_letters(q); }},
      {"GET",
       "/api/v1/epochs",
       "Leadership history, newest first: who led each epoch, when, how it ended.",
       {"limit", "cursor"},
       false,
       [this](const HttpRequest&, const Params& q) { return list_epochs(q); }},
      {"GET",
       "/api/v1/workers",
       "Workers by id: state, labels, capacity, in flight, last heartbeat.",
       {"limit", "cursor"},
       false,
       [this](const HttpRequest&, const Params& q) { return list_workers(q); }},
  };
}

HttpResponse AdminApi::handle(const HttpRequest& r) {
  std::string path = r.target.substr(0, r.target.find('?'));
  if (r.method == "GET" && path == "/healthz") return {200, "text/plain", "ok\n", {}};
  if (r.method == "GET" && path == "/status") return status_json();
  if (r.method == "GET" && path == "/metrics") {
    std::string body = metrics_.render();
    std::lock_guard lock(store_mutex_);
    if (auto counts = store_.run_counts()) {
      body += "# HELP baton_runs Runs by state.\n# TYPE baton_runs gauge\n";
      for (const auto& [state, n] : counts->by_state)
        body += "baton_runs{state=\"" + state + "\"} " + std::to_string(n) + "\n";
    }
    return {200, "text/plain; version=0.0.4", body, {}};
  }
  if (r.method == "GET" && (path == "/" || path == "/index.html")) return dashboard();

  if (path.rfind("/api/v1/", 0) == 0) return route(r, path);
  return error(404, "not_found", "no route " + r.method + " " + path);
}

HttpResponse AdminApi::route(const HttpRequest& r, const std::string& path) {
  auto split = [](const std::string& p) {
    std::vector<std::string> parts;
    std::size_t at = 1;
    while (at <= p.size()) {
      auto next = p.find('/', at);
      if (next == std::string::npos) next = p.size();
      parts.push_back(p.substr(at, next - at));
      at = next + 1;
    }
    return parts;
  };
  const auto segments = split(path);
  std::set<std::string> allowed;  // methods of a route whose pattern matches
  for (const auto& route : routes_) {
    const auto pattern = split(route.pattern);
    if (pattern.size() != segments.size()) continue;
    std::map<std::string, std::string> params;
    bool match = true;
    for (std::size_t i = 0; i < pattern.size() && match; ++i) {
      if (pattern[i].size() > 2 && pattern[i].front() == '{' && pattern[i].back() == '}')
        params[pattern[i].substr(1, pattern[i].size() - 2)] = segments[i];
      else
        match = pattern[i] == segments[i];
    }
    if (!match) continue;
    if (route.method != r.method) {
      allowed.insert(route.method);
      continue;
    }
    if (route.mutation) {
      auto auth = r.headers.find("authorization");
      std::string presented = auth == r.headers.end() ? "" : auth->second;
      if (presented.rfind("Bearer ", 0) != 0 || !constant_time_equal(presented.substr(7), admin_token_))
        return error(401, "unauthenticated", "mutations need 'Authorization: Bearer <admin token>'");
    }
    // The query is checked against the route's documented parameters here,
    // once for every route: an unknown or repeated one is refused by name.
    std::map<std::string, std::string> query;
    if (auto bad = query_of(r.target, route.query, query)) return error(400, "bad_request", *bad);
    params.insert(query.begin(), query.end());
    return route.handler(r, params);
  }
  if (!allowed.empty()) {
    std::string methods;
    for (const auto& m : allowed) methods += (methods.empty() ? "" : ", ") + m;
    HttpResponse res = error(405, "method_not_allowed", path + " takes " + methods + ", not " + r.method);
    res.headers["Allow"] = methods;
    return res;
  }
  return error(404, "not_found", "no route " + r.method + " " + path);
}

HttpResponse AdminApi::openapi() const {
  json::object paths;
  for (const auto& route : routes_) {
    json::array parameters;
    for (std::size_t at = route.pattern.find('{'); at != std::string::npos; at = route.pattern.find('{', at + 1)) {
      const std::string name = route.pattern.substr(at + 1, route.pattern.find('}', at) - at - 1);
      parameters.push_back(json::object{
          {"name", name}, {"in", "path"}, {"required", true}, {"schema", json::object{{"type", "string"}}}});
    }
    for (const auto& q : route.query)
      parameters.push_back(json::object{
          {"name", q}, {"in", "query"}, {"required", false}, {"schema", json::object{{"type", "string"}}}});
    json::object op{
        {"summary", route.summary},
        {"parameters", parameters},
        {"responses", json::object{{"200", json::object{{"description", "OK"}}},
                                   {"default", json::object{{"description", "an error: {\"code\", \"message\"}"}}}}}};
    if (route.mutation) op["security"] = json::array{json::object{{"bearer", json::array{}}}};
    std::string method = route.method;
    for (auto& ch : method) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!paths.contains(route.pattern)) paths[route.pattern] = json::object{};
    paths[route.pattern].as_object()[method] = op;
  }
  return ok_json(json::object{
      {"openapi", "3.0.3"},
      {"info", json::object{{"title", "Baton admin API"}, {"version", "1"}}},
      {"paths", paths},
      {"components", json::object{{"securitySchemes",
                                   json::object{{"bearer", json::object{{"type", "http"}, {"scheme", "bearer"}}}}}}}});
}

HttpResponse AdminApi::cancel(std::int64_t id, const HttpRequest& r) {
  NodeStatus s = status_();
  if (s.role != "leader")
    return {
        307,
        "application/json",
        json::serialize(json::object{
            {"code", "not_leader"}, {"message", "send this to the leader"}, {"leader_endpoint", s.leader_endpoint}}),
        {{"Location", "http://" + s.leader_endpoint + r.target}}};
  if (!cancel_(id, "canceled through the API")) return error(503, "not_leader", "this node is not leading now");
  std::lock_guard lock(store_mutex_);
  (void)store_.audit("admin", "run.cancel", "run:" + std::to_string(id), Epoch{s.epoch}, "{}");
  return ok_json(json::object{{"run_id", id}, {"status", "cancel requested"}}, 202);
}

HttpResponse AdminApi::list_runs(const Params& q) {
  store::RunQuery query;
  query.job = text_param(q, "job");
  query.worker = text_param(q, "worker");
  query.idempotency_key = text_param(q, "idempotency_key");
  if (auto state = text_param(q, "state")) {
    if (!parse_run_state(*state))
      return error(400, "bad_request",
                   "query parameter 'state' must be a run state (PENDING, ASSIGNED, RUNNING, ...), got '" +
                       state->substr(0, 64) + "'");
    query.state = *state;
  }
  Paging page;
  for (auto bad :
       {paging_of(q, true, page), int_param(q, "created_after", 0, INT64_MAX / 1000000, query.created_after_unix),
        int_param(q, "created_before", 0, INT64_MAX / 1000000, query.created_before_unix)})
    if (bad) return error(400, "bad_request", *bad);
  query.limit = page.limit;
  query.before_id = page.before_id;
  std::lock_guard lock(store_mutex_);
  return page_or_error(store_.list_runs(query));
}

HttpResponse AdminApi::list_epochs(const Params& q) {
  Paging page;
  if (auto bad = paging_of(q, true, page)) return error(400, "bad_request", *bad);
  std::lock_guard lock(store_mutex_);
  return page_or_error(store_.list_epochs(page.limit, page.before_id));
}

HttpResponse AdminApi::list_workers(const Params& q) {
  Paging page;
  if (auto bad = paging_of(q, false, page)) return error(400, "bad_request", *bad);
  std::lock_guard lock(store_mutex_);
  return page_or_error(store_.list_workers(page.limit, page.after_name));
}

HttpResponse AdminApi::list_jobs(const Params& q, std::optional<std::string> only) {
  Paging paging;
  if (auto bad = paging_of(q, false, paging)) return error(400, "bad_request", *bad);
  Result<store::JobPage> page = make_error(Errc::db_error, "not read");
  {
    std::lock_guard lock(store_mutex_);
    page = store_.list_jobs(paging.limit, paging.after_name, only);
  }
  if (!page) return error(503, "db_unavailable", page.error().message);
  if (only && page->jobs.empty()) return error(404, "not_found", "no job '" + only->substr(0, 64) + "'");
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

HttpResponse AdminApi::set_paused(const std::string& job, bool paused) {
  if (!valid_name(job)) return error(400, "bad_request", "job name '" + job.substr(0, 64) + "' is not valid");
  const NodeStatus s = status_();
  std::lock_guard lock(store_mutex_);
  auto version = store_.set_job_paused(job, paused, "admin", Epoch{s.epoch});
  if (!version) return error(503, "db_unavailable", version.error().message);
  if (!*version) return error(404, "unknown_job", "no job '" + job.substr(0, 64) + "'");
  return ok_json(json::object{{"job", job}, {"paused", paused}, {"version", **version}});
}

HttpResponse AdminApi::list_dead_letters(const Params& q) {
  Paging page;
  if (auto bad = paging_of(q, true, page)) return error(400, "bad_request", *bad);
  auto status = text_param(q, "status");
  if (status && *status != "pending" && *status != "acknowledged" && *status != "replayed" && *status != "closed")
    return error(400, "bad_request",
                 "query parameter 'status' must be pending, acknowledged, replayed or closed, got '" +
                     status->substr(0, 64) + "'");
  std::lock_guard lock(store_mutex_);
  return page_or_error(store_.list_dead_letters(page.limit, page.before_id, status));
}

HttpResponse AdminApi::list_audit(const Params& q) {
  Paging page;
  if (auto bad = paging_of(q, true, page)) return error(400, "bad_request", *bad);
  std::lock_guard lock(store_mutex_);
  return page_or_error(store_.list_audit(page.limit, page.before_id, text_param(q, "subject")));
}

HttpResponse AdminApi::status_json() {
  NodeStatus s = status_();
  json::object counts;
  {
    std::lock_guard lock(store_mutex_);
    if (auto c = store_.run_counts())
      for (const auto& [state, n] : c->by_state) counts[state] = n;
  }
  return ok_json(json::object{{"node_id", s.node_id},
                              {"incarnation", s.incarnation},
                              {"role", s.role},
                              {"epoch", s.epoch},
                              {"leader_id", s.leader_id},
                              {"leader_endpoint", s.leader_endpoint},
                              {"attached_workers", s.attached_workers},
                              {"runs_by_state", counts}});
}

HttpResponse AdminApi::trigger(const std::string& job, const HttpRequest& r, const NodeStatus& s) {
  if (s.role != "leader")
    return {
        307,
        "application/json",
        json::serialize(json::object{
            {"code", "not_leader"}, {"message", "send this to the leader"}, {"leader_endpoint", s.leader_endpoint}}),
        {{"Location", "http://" + s.leader_endpoint + r.target}}};
  std::optional<std::string> key;
  if (auto k = r.headers.find("idempotency-key"); k != r.headers.end()) {
    if (k->second.empty() || k->second.size() > 200)
      return error(400, "bad_request", "Idempotency-Key must be 1-200 characters");
    key = k->second;
  }
  std::lock_guard lock(store_mutex_);
  auto created = store_.create_job_run(Epoch{s.epoch}, job, key, "api", std::nullopt);
  if (!created) {
    if (created.error().code == Errc::bad_input) return error(404, "unknown_job", created.error().message);
    return error(503, "db_unavailable", created.error().message);
  }
  if (created->outcome == store::WriteOutcome::fenced) return error(503, "not_leader", "this node was superseded");
  if (created->outcome == store::WriteOutcome::conflict) {
    return ok_json(json::object{{"job", job},
                                {"idempotency_key", *key},
                                {"created", false},
                                {"message", "a run with this Idempotency-Key is already active"}},
                   200);
  }
  // Wake the leader's dispatcher now: without it the run waits for the next
  // dispatch period, which was most of the trigger-to-start latency.
  if (run_created_) run_created_();
  (void)store_.audit(
      "admin", "job.trigger", "job:" + job, Epoch{s.epoch},
      json::serialize(json::object{{"run_id", created->run.value},
                                   {"idempotency_key", key ? json::value(*key) : json::value(nullptr)}}));
  return ok_json(json::object{{"job", job}, {"run_id", created->run.value}, {"created", true}}, 201);
}

HttpResponse AdminApi::run(std::int64_t id) {
  std::lock_guard lock(store_mutex_);
  auto r = store_.run_json(RunId{id});
  if (!r) return error(503, "db_unavailable", r.error().message);
  if (!*r) return error(404, "not_found", "no run " + std::to_string(id));
  return {200, "application/json", **r, {}};
}

HttpResponse AdminApi::dashboard() {
  NodeStatus s = status_();
  std::string rows;
  {
    std::lock_guard lock(store_mutex_);
    if (auto c = store_.run_counts())
      for (const auto& [state, n] : c->by_state)
        rows += "<tr><td>" + state + "</td><td>" + std::to_string(n) + "</td></tr>";
  }
  auto esc = [](const std::string& in) {
    std::string out;
    for (char c : in) {
      if (c == '<')
        out += "&lt;";
      else if (c == '>')
        out += "&gt;";
      else if (c == '&')
        out += "&amp;";
      else
        out += c;
    }
    return out;
  };
  std::string body =
      "<!doctype html><html><head><meta charset=utf-8><meta http-equiv=refresh content=2><title>Baton " +
      esc(s.node_id) +
      "</title><style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 12px;text-align:left}</style></head>"
      "<body><h1>Baton node " +
      esc(s.node_id) + "</h1><p>role <b>" + esc(s.role) + "</b>, epoch <b>" + std::to_string(s.epoch) +
      "</b>, leader <b>" + esc(s.leader_id) + "</b> at " + esc(s.leader_endpoint) + ", attached workers <b>" +
      std::to_string(s.attached_workers) + "</b></p><h2>Runs by state</h2><table>" + rows +
      "</table><p><a href=/status>/status</a> &middot; <a href=/metrics>/metrics</a></p></body></html>";
  return {200, "text/html; charset=utf-8", body, {}};
}

}  // namespace baton::leader
