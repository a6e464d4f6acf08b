#include "baton/admin/admin_api.h"

#include "api_contract.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "admin_handler_support.h"
#include "admin_http.h"
#include "baton/base/json_text.h"
#include "baton/base/prometheus_label.h"
#include "baton/protocol/messages.h"
#include "baton/service/process_metrics.h"
#include "dashboard_assets.h"

namespace baton::admin {

using namespace admin_http;

AdminApi::AdminApi(AdminApiPorts ports, store::AdminStore& store, service::NodeMetrics& metrics, const Clock& clock,
                   std::string config_admin_token, bool metrics_need_token)
    : ports_(std::move(ports)),
      store_(store),
      metrics_(metrics),
      auth_(
          std::move(config_admin_token),
          [this](const std::string& hash) -> Result<std::optional<store::TokenGrant>> {
            metrics_.token_lookups++;
            if (token_lookups_) return (*token_lookups_)(hash);
            return with_store([&](auto& s) { return s.token_by_hash(hash); });
          },
          clock, Millis{5000}, [this](AuthFailure why) { auth_failed(why); }),
      metrics_need_token_(metrics_need_token),
      routes_(make_routes()),
      clock_(clock) {}

Error AdminApi::reads_busy() {
  return make_error(Errc::db_unavailable,
                    std::string(admin_http::reads_busy_prefix) +
                        "the API's read connection is taken by another search; retry in a second");
}

void AdminApi::set_token_stores(const std::vector<store::AdminStore*>& tokens, store::AdminStore* reads) {
  read_store_ = reads;
  std::vector<TokenLookups::Lookup> lanes;
  for (store::AdminStore* s : tokens) lanes.push_back([s](const std::string& hash) { return s->token_by_hash(hash); });
  token_lookups_ = std::make_unique<TokenLookups>(std::move(lanes));
}

bool AdminApi::authenticated(const std::string& authorization) {
  auto who = auth_.authenticate(authorization);
  return who && *who;
}

HttpResponse AdminApi::credentials_unavailable(const Error& e) {
  {
    const MonoTime now = clock_.mono();
    std::lock_guard lock(unavailable_log_mutex_);
    if (!unavailable_logged_ || now - *unavailable_logged_ >= std::chrono::seconds(1)) {
      unavailable_logged_ = now;
      spdlog::error("api_credentials_unavailable error={}", json_quote(e.message));
    }
  }
  HttpResponse r = error(503, "unavailable", "credentials cannot be checked right now; retry shortly");
  r.headers["Retry-After"] = "1";
  return r;
}

/// Counted each; logged at most once per `auth_log_every`, with how many
/// came since the last line (a flood of bad tokens is one line per period).
void AdminApi::auth_failed(AuthFailure why) {
  metrics_.auth_failures[static_cast<std::size_t>(why)]++;
  const MonoTime now = clock_.mono();
  std::lock_guard lock(auth_log_mutex_);
  ++auth_unlogged_;
  if (auth_logged_ && now - *auth_logged_ < auth_log_every) return;
  spdlog::warn("api_auth_failed reason={} count={} (since the last such line)", to_string(why), auth_unlogged_);
  auth_logged_ = now;
  auth_unlogged_ = 0;
}

template <class T, class F>
Result<T> AdminApi::recent(Recent<T>& r, F&& read) {
  std::lock_guard lock(r.mutex);
  const MonoTime now = clock_.mono();
  if (r.value && now - r.at < std::chrono::seconds(1)) return *r.value;
  Result<T> fresh = with_store(std::forward<F>(read));
  if (fresh) {
    r.value = *fresh;
    r.at = now;
  }
  return fresh;
}

std::optional<HttpResponse> AdminApi::over_rate(const ApiRoute& route, const std::string& who) {
  // What creates runs or deliveries, and what scans a table for a list.
  // A ping or a redelivery queues a delivery ahead of the alerts behind it
  // (security review N-L1): it counts as a trigger.
  const auto& p = route.pattern;
  auto ends_with = [&](const std::string& s) {
    return p.size() >= s.size() && p.compare(p.size() - s.size(), s.size(), s) == 0;
  };
  const bool creates = route.method == "POST" &&
                       (ends_with("/trigger") || ends_with("/rerun") || ends_with("/replay") || ends_with("/ping") ||
                        ends_with("/redeliver") || p == "/api/v1/events" || p == "/api/v1/triggers");
  const bool lists = route.method == "GET" && p.back() != '}' && p != "/api/v1/openapi.json" && p != "/api/v1/settings";
  if (!creates && !lists) return std::nullopt;
  const double rate = creates ? limits_.trigger_rate : limits_.read_rate;
  const double burst = creates ? limits_.trigger_burst : limits_.read_burst;
  if (rate <= 0) return std::nullopt;
  std::lock_guard lock(rate_mutex_);
  auto& buckets = creates ? trigger_buckets_ : read_buckets_;
  auto it = buckets.try_emplace(who, rate, burst).first;
  if (it->second.take(1, clock_.mono()) == 1) return std::nullopt;
  metrics_.requests_rate_limited++;
  HttpResponse r = error(429, "rate_limited",
                         "token '" + who + "' is over " + (creates ? "the trigger" : "the list-read") + " rate (" +
                             std::to_string(static_cast<int>(rate)) + "/s, bursts of " +
                             std::to_string(static_cast<int>(burst)) + "); retry in a second");
  r.headers["Retry-After"] = "1";
  return r;
}

HttpResponse AdminApi::handle(const HttpRequest& r) {
  const MonoTime began = clock_.mono();
  std::string route_name = "other";
  HttpResponse res = answer(r, route_name);
  // Methods outside the API's few are one name: a bounded set of series.
  static const std::set<std::string> methods{"GET", "POST", "PUT", "DELETE", "OPTIONS", "HEAD"};
  metrics_.observe_http_request(methods.count(r.method) ? r.method : "other", route_name, res.status,
                                std::chrono::duration_cast<std::chrono::microseconds>(clock_.mono() - began).count());
  return res;
}

HttpResponse AdminApi::answer(const HttpRequest& r, std::string& route_name) {
  std::string path = r.target.substr(0, r.target.find('?'));
  if (path == "/healthz" || path == "/readyz" || path == "/status" || path == "/metrics") route_name = path;
  if (path == "/" || path == "/index.html" || path.rfind("/dashboard/", 0) == 0) route_name = "/dashboard";
  if (r.method == "GET" && path == "/healthz") return {200, "text/plain", "ok\n", {}};
  if (r.method == "GET" && path == "/readyz") return readyz();
  if (r.method == "GET" && path == "/status") return status_json();
  if (r.method == "GET" && path == "/metrics") {
    if (metrics_need_token_) {
      auto it = r.headers.find("authorization");
      auto who = auth_.authenticate(it == r.headers.end() ? "" : it->second);
      if (!who) return credentials_unavailable(who.error());
      if (!*who) return error(401, "unauthenticated", "/metrics needs 'Authorization: Bearer <token>' here");
    }
    return metrics();
  }
  if (r.method == "GET" && (path == "/" || path == "/index.html")) return dashboard("index.html");
  if (r.method == "GET" && path.rfind("/dashboard/", 0) == 0) return dashboard(path.substr(11));

  if (path.rfind("/api/v1/", 0) == 0) {
    // The dashboard served by a follower sends the leader's calls to the
    // leader (another origin): bearer tokens, not cookies, so any origin may
    // call; without a token nothing is answered anyway.
    if (r.method == "OPTIONS") {
      HttpResponse pre{204, "text/plain", "", {}};
      pre.headers["Access-Control-Allow-Origin"] = "*";
      pre.headers["Access-Control-Allow-Methods"] = "GET, POST, PUT, DELETE";
      pre.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, Idempotency-Key";
      pre.headers["Access-Control-Max-Age"] = "600";
      return pre;
    }
    HttpResponse res = route(r, path, route_name);
    res.headers["Access-Control-Allow-Origin"] = "*";
    return res;
  }
  return error(404, "not_found", "no route " + r.method + " " + path);
}

HttpResponse AdminApi::route(const HttpRequest& r, const std::string& path, std::string& route_name) {
  auto segments = path_segments(r.target);
  if (auto* bad = std::get_if<std::string>(&segments)) return error(400, "bad_request", *bad);
  std::set<std::string> allowed;  // methods of a route whose pattern matches
  for (const auto& route : routes_) {
    auto matched = match_pattern(route.pattern, std::get<std::vector<std::string>>(segments));
    if (!matched) continue;
    route_name = route.pattern;
    std::map<std::string, std::string> params = std::move(*matched);
    if (route.method != r.method) {
      allowed.insert(route.method);
      continue;
    }
    // Who first: an unauthenticated caller learns nothing else, not even
    // whether its query was well-formed.
    auto header = r.headers.find("authorization");
    if (route.need == Role::anyone) {  // the handler checks its own credential
      std::map<std::string, std::string> query;
      if (auto bad = query_of(r.target, route.query, query)) return error(400, "bad_request", *bad);
      return route.handler(ApiCall{r, std::move(params), Principal{"anonymous", Role::anyone}, ports_.status()});
    }
    auto who = auth_.authenticate(header == r.headers.end() ? "" : header->second);
    if (!who) return credentials_unavailable(who.error());
    if (!*who)
      return error(401, "unauthenticated",
                   "/api/v1 needs 'Authorization: Bearer <token>' (a token of role " +
                       std::string(to_string(route.need)) + " or above; see docs/ctl.md)");
    if ((*who)->role < route.need)
      return error(403, "forbidden",
                   r.method + " " + route.pattern + " needs the " + to_string(route.need) + " role; token '" +
                       (*who)->name + "' has " + to_string((*who)->role));
    if (auto refused = over_rate(route, (*who)->name)) return *refused;
    // The query is checked against the route's documented parameters here,
    // once for every route: an unknown or repeated one is refused by name.
    std::map<std::string, std::string> query;
    if (auto bad = query_of(r.target, route.query, query)) return error(400, "bad_request", *bad);
    params.insert(query.begin(), query.end());
    ApiCall call{r, std::move(params), **who, ports_.status()};
    if (route.leader_only && call.node.role != "leader") return to_leader(r, scheme_, call.node.leader_endpoint);
    return route.handler(call);
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

namespace {

const json::object& contract() {
  static const json::object c = json::parse(api_contract_json()).as_object();
  return c;
}

const char* status_text(std::string_view code) {
  if (code == "200") return "OK";
  if (code == "201") return "Created";
  if (code == "202") return "Accepted";
  return "Answer";
}

json::object json_content(const json::value& schema) {
  return json::object{{"application/json", json::object{{"schema", schema}}}};
}

const json::object* contract_of(const ApiRoute& route) {
  const auto* found = contract().at("routes").as_object().if_contains(route.method + " " + route.pattern);
  return found ? &found->as_object() : nullptr;
}

}  // namespace

std::vector<std::string> AdminApi::contract_drift() const {
  std::vector<std::string> out;
  std::set<std::string> known, operation_ids;
  for (const auto& route : routes_) {
    const std::string key = route.method + " " + route.pattern;
    known.insert(key);
    const json::object* typed = contract_of(route);
    if (!typed) {
      out.push_back(key + ": no entry in admin/api/contract.json");
      continue;
    }
    if (!typed->contains("responses") || typed->at("responses").as_object().empty())
      out.push_back(key + ": no response schema");
    std::set<std::string> documented(route.query.begin(), route.query.end()), typed_query;
    if (const auto* q = typed->if_contains("query"))
      for (const auto& kv : q->as_object()) typed_query.insert(std::string(kv.key()));
    if (documented != typed_query) out.push_back(key + ": the contract's query parameters are not the route's");
    if (route.body.empty() == typed->contains("body"))
      out.push_back(key + (route.body.empty() ? ": a body schema for a route without a body" : ": no body schema"));
    const auto* op = typed->if_contains("operation_id");
    if (!op || !op->is_string() || op->as_string().empty())
      out.push_back(key + ": no operation_id (what a generated client names its call)");
    else if (!operation_ids.insert(std::string(op->as_string())).second)
      out.push_back(key + ": operation_id " + std::string(op->as_string()) + " is another route's too");
  }
  for (const auto& kv : contract().at("routes").as_object())
    if (!known.contains(std::string(kv.key()))) out.push_back(std::string(kv.key()) + ": no such route");
  return out;
}

HttpResponse AdminApi::openapi() const {
  // The route table, typed by the contract (api_contract.h): what a route
  // takes and answers, each answer's schema, and every error's.
  const json::object error_answer{{"description", "an error: its code and a message naming what was wrong"},
                                  {"content", json_content(json::object{{"$ref", "#/components/schemas/Error"}})}};
  json::object paths;
  for (const auto& route : routes_) {
    const json::object* typed = contract_of(route);
    const json::object* query =
        typed ? typed->if_contains("query") ? &typed->at("query").as_object() : nullptr : nullptr;
    json::array parameters;
    for (std::size_t at = route.pattern.find('{'); at != std::string::npos; at = route.pattern.find('{', at + 1)) {
      const std::string name = route.pattern.substr(at + 1, route.pattern.find('}', at) - at - 1);
      json::object schema{{"type", "string"}};
      if (name == "id") schema = json::object{{"type", "integer"}, {"minimum", 1}};
      parameters.push_back(json::object{{"name", name}, {"in", "path"}, {"required", true}, {"schema", schema}});
    }
    for (const auto& q : route.query) {
      json::value schema = json::object{{"type", "string"}};
      if (query && query->contains(q)) schema = query->at(q);
      parameters.push_back(json::object{{"name", q}, {"in", "query"}, {"required", false}, {"schema", schema}});
    }
    // Optional request headers a route reads (a trigger's Idempotency-Key):
    // declared, so a generated client can send them typed.
    if (const auto* headers = typed ? typed->if_contains("headers") : nullptr)
      for (const auto& [name, schema] : headers->as_object())
        parameters.push_back(json::object{{"name", name}, {"in", "header"}, {"required", false}, {"schema", schema}});
    json::object responses;
    if (typed)
      for (const auto& [code, schema] : typed->at("responses").as_object())
        responses[code] = json::object{{"description", status_text(code)}, {"content", json_content(schema)}};
    responses["4XX"] = error_answer;  // said apart from "default": generators type a client's errors by it
    responses["default"] = error_answer;
    // A follower answers a leader's route with 307 and the leader's address;
    // a client sends the same request there, with its token when that
    // address is one of the cluster's nodes (docs/clients.md, "Redirects").
    if (route.leader_only)
      responses["307"] = json::object{
          {"description",
           "from a follower: the leader's address in Location; send the same request there, with the token"},
          {"headers",
           json::object{{"Location", json::object{{"description", "the leader's URL for this request"},
                                                  {"schema", json::object{{"type", "string"}, {"format", "uri"}}}}}}},
          {"content", json_content(json::object{{"$ref", "#/components/schemas/Error"}})}};
    json::object op{{"summary", route.summary},
                    {"parameters", parameters},
                    {"x-baton-role", to_string(route.need)},
                    {"responses", responses}};
    if (typed && typed->contains("operation_id")) op["operationId"] = typed->at("operation_id");
    // Open routes say so (an empty list), as generators and linters expect.
    op["security"] = route.need == Role::anyone ? json::array{} : json::array{json::object{{"bearer", json::array{}}}};
    if (route.leader_only) op["x-baton-leader-only"] = true;
    if (!route.body.empty()) {
      json::value schema = json::object{{"type", "object"}};
      if (typed && typed->contains("body")) schema = typed->at("body");
      op["requestBody"] = json::object{{"required", route.body.rfind("optional", 0) != 0},
                                       {"description", route.body},
                                       {"content", json_content(schema)}};
    }
    std::string method = route.method;
    for (auto& ch : method) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!paths.contains(route.pattern)) paths[route.pattern] = json::object{};
    paths[route.pattern].as_object()[method] = op;
  }
  json::object components = contract().at("components").as_object();
  components["securitySchemes"] = json::object{{"bearer", json::object{{"type", "http"}, {"scheme", "bearer"}}}};
  return ok_json(json::object{
      {"openapi", "3.1.0"},
      {"info", json::object{{"title", "Baton admin API"},
                            {"version", "1"},
                            {"description", "The HTTP API of every Baton node (docs/operations.md, \"HTTP API\")."}}},
      {"servers",
       json::array{json::object{{"url", "/"},
                                {"description",
                                 "the node that served this document; any node answers, a follower with 307 to "
                                 "the leader on a leader's route"}}}},
      {"security", json::array{json::object{{"bearer", json::array{}}}}},
      {"paths", paths},
      {"components", components}});
}

HttpResponse AdminApi::metrics() {
  std::string body =
      service::render_build_info(BATON_VERSION, protocol::protocol_version_min, protocol::protocol_version_max) +
      metrics_.render();
  if (auto p = service::read_process_stats()) body += service::render_process_metrics(*p);
  // The cluster's state from the database (the same on every node; absent
  // while the database does not answer, and baton_database_up says so).
  auto g = recent(gauges_, [](auto& s) { return s.cluster_gauges(); });
  body +=
      "# HELP baton_database_up 1 if this node read the cluster's state from the database for this scrape.\n"
      "# TYPE baton_database_up gauge\nbaton_database_up " +
      std::string(g ? "1" : "0") + "\n";
  if (!g) return {200, "text/plain; version=0.0.4; charset=utf-8", body, {}};
  body += "# HELP baton_runs Runs by state (all runs in the database).\n# TYPE baton_runs gauge\n";
  for (const auto& [state, n] : g->runs_by_state)
    body += "baton_runs{state=\"" + state + "\"} " + std::to_string(n) + "\n";
  body +=
      "# HELP baton_oldest_pending_run_age_seconds How long the oldest run that could start (PENDING, ORPHANED or "
      "RETRY_WAITING, due) has waited since it became due; 0 when none waits.\n"
      "# TYPE baton_oldest_pending_run_age_seconds gauge\nbaton_oldest_pending_run_age_seconds " +
      std::to_string(g->oldest_pending_age_s) + "\n";
  body +=
      "# HELP baton_runs_unmatched Unfinished runs whose selector no attached, active worker satisfies.\n"
      "# TYPE baton_runs_unmatched gauge\nbaton_runs_unmatched " +
      std::to_string(g->unmatched_runs) + "\n";
  body += "# HELP baton_dead_letters Dead letters by triage status.\n# TYPE baton_dead_letters gauge\n";
  for (const auto& [status, n] : g->dead_letters_by_status)
    body += "baton_dead_letters{triage_status=\"" + status + "\"} " + std::to_string(n) + "\n";
  // Worker ids are free text from the worker's config: escaped as label values.
  auto label = [](const std::string& v) { return prometheus_label_value(v); };
  body +=
      "# HELP baton_cron_slots_skipped Cron slots of each scheduled job given up (misfire policy, catch-up limit, "
      "starting deadline, concurrency forbid), from the decision ledger within retention.\n"
      "# TYPE baton_cron_slots_skipped gauge\n";
  for (const auto& [job, n] : g->cron_slots_skipped_by_job)
    body += "baton_cron_slots_skipped{job=\"" + label(job) + "\"} " + std::to_string(n) + "\n";
  // The cadence over the last hour (docs/scheduling.md, "Cadence"): the
  // slots the schedule made due, those that ran, and their ratio, the
  // effective interval over the configured one: 1 on cadence, 2 when every
  // other slot ran, +Inf when none did. An alert: ratio > 1.1 for 10m.
  std::string due_lines, fired_lines, ratio_lines;
  for (const auto& [job, h] : g->cron_last_hour) {
    const auto due = due_slots(h.schedule, h.time_zone, h.since_unix, h.until_unix);
    if (!due) continue;
    const std::string l = "{job=\"" + label(job) + "\"} ";
    due_lines += "baton_cron_slots_due_last_hour" + l + std::to_string(*due) + "\n";
    fired_lines += "baton_cron_slots_fired_last_hour" + l + std::to_string(h.fired) + "\n";
    ratio_lines += "baton_cron_cadence_ratio" + l +
                   (*due == 0      ? std::string("1")
                    : h.fired == 0 ? std::string("+Inf")
                                   : std::to_string(static_cast<double>(*due) / static_cast<double>(h.fired))) +
                   "\n";
  }
  body +=
      "# HELP baton_cron_slots_due_last_hour Slots of each live, unpaused cron job its schedule made due in the last "
      "hour (since the job was made or resumed, if later).\n# TYPE baton_cron_slots_due_last_hour gauge\n" +
      due_lines +
      "# HELP baton_cron_slots_fired_last_hour Of those, the slots whose run was created (on time or caught up), "
      "from the decision ledger.\n# TYPE baton_cron_slots_fired_last_hour gauge\n" +
      fired_lines +
      "# HELP baton_cron_cadence_ratio The effective interval between a cron job's runs over the last hour divided "
      "by its configured one (due / fired): 1 on cadence, +Inf when no due slot ran.\n"
      "# TYPE baton_cron_cadence_ratio gauge\n" +
      ratio_lines;
  body +=
      "# HELP baton_invariant_violations_total Violations of an invariant found by the history checker's sweep in "
      "the database's records (docs/assurance.md), each recorded once.\n"
      "# TYPE baton_invariant_violations_total counter\n";
  for (const auto& [name, n] : g->invariant_violations)
    body += "baton_invariant_violations_total{invariant=\"" + label(name) + "\"} " + std::to_string(n) + "\n";
  body +=
      "# HELP baton_verify_runs_checked_total Finished runs the history checker's sweep has checked.\n"
      "# TYPE baton_verify_runs_checked_total counter\nbaton_verify_runs_checked_total " +
      std::to_string(g->verify_runs_checked) + "\n";
  body +=
      "# HELP baton_verify_lag_seconds How long ago the oldest finished run the history checker has not checked "
      "yet finished (0: none waits; it includes verify.settle).\n"
      "# TYPE baton_verify_lag_seconds gauge\nbaton_verify_lag_seconds " +
      std::to_string(g->verify_lag_s) + "\n";
  if (g->verify_swept_age_s)
    body +=
        "# HELP baton_verify_last_sweep_age_seconds Time since the history checker's last sweep was recorded (the "
        "leader sweeps every verify.every).\n"
        "# TYPE baton_verify_last_sweep_age_seconds gauge\nbaton_verify_last_sweep_age_seconds " +
        std::to_string(*g->verify_swept_age_s) + "\n";
  std::map<std::pair<std::string, std::string>, int> by_state;
  for (const auto& w : g->workers) by_state[{w.state, w.admin_state}]++;
  body +=
      "# HELP baton_workers Registered workers by connection state and operator hold.\n# TYPE baton_workers gauge\n";
  for (const auto& [k, n] : by_state)
    body += "baton_workers{state=\"" + k.first + "\",admin_state=\"" + k.second + "\"} " + std::to_string(n) + "\n";
  body +=
      "# HELP baton_worker_heartbeat_age_seconds Time since an attached worker was last heard from, as last recorded "
      "(every 5 s; in a fleet beyond runtime.workers_seen_rows_per_second x 5 workers, less often).\n"
      "# TYPE baton_worker_heartbeat_age_seconds gauge\n";
  for (const auto& w : g->workers)
    if (w.heartbeat_age_s)
      body += "baton_worker_heartbeat_age_seconds{worker=\"" + label(w.id) + "\"} " +
              std::to_string(*w.heartbeat_age_s) + "\n";
  return {200, "text/plain; version=0.0.4; charset=utf-8", body, {}};
}

HttpResponse AdminApi::readyz() {
  // Liveness is /healthz (the process answers); readiness is whether this
  // node can do its work now: its database answers, and a leader is known
  // (this node, or one whose endpoint it can send workers and calls to).
  return readiness_.answer(ports_.status(), clock_.mono());
}

void AdminApi::check_database(store::AdminStore& own) {
  auto db = own.database_epoch();
  readiness_.checked(bool(db), clock_.mono());
  if (database_answered_ == bool(db)) return;
  if (db)
    spdlog::info("readiness database=ok");
  else
    spdlog::warn("readiness database=unavailable error={}", json_quote(db.error().message));
  database_answered_ = bool(db);
}

HttpResponse AdminApi::status_json() {
  NodeStatus s = ports_.status();
  json::object counts;
  json::value unmatched = nullptr;
  if (auto c = recent(counts_, [](auto& st) { return st.run_counts(); })) {
    for (const auto& [state, n] : c->by_state) counts[state] = n;
    unmatched = c->unmatched;
  }
  return ok_json(json::object{{"node_id", s.node_id},
                              {"version", BATON_VERSION},
                              {"incarnation", s.incarnation},
                              {"role", s.role},
                              {"epoch", s.epoch},
                              {"leader_id", s.leader_id},
                              {"leader_endpoint", s.leader_endpoint},
                              {"leader_state", s.leader_state},
                              {"last_leader_id", s.last_leader_id},
                              {"last_leader_epoch", s.last_leader_epoch},
                              {"lease_expires_in_ms", s.lease_left_ms >= 0 ? json::value(s.lease_left_ms) : nullptr},
                              {"attached_workers", s.attached_workers},
                              {"runs_by_state", counts},
                              {"unmatched_runs", unmatched}});
}

std::string AdminApi::dashboard_policy() {
  // The page calls the leader, wherever it is: the nodes registered in the
  // database (their advertised HOST:PORT, with the page's own scheme), read
  // at most once a second whatever the rate of page loads. Not another
  // origin: a script that found its way into the page cannot send what it
  // reads (a token in session storage) anywhere else.
  std::string connect = "'self'";
  if (auto nodes = recent(nodes_, [](auto& s) { return s.list_nodes(100, std::nullopt); })) {
    boost::system::error_code ec;
    const json::value items = json::parse(nodes->items_json, ec);
    if (!ec && items.is_array())
      for (const auto& n : items.as_array()) {
        const auto* e = n.is_object() ? n.as_object().if_contains("endpoint") : nullptr;
        if (!e || !e->is_string() || e->as_string().empty() || e->as_string().size() > 255) continue;
        const std::string endpoint(e->as_string());
        // Only what a HOST:PORT holds may reach the header.
        const bool plain = std::all_of(endpoint.begin(), endpoint.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '[' ||
                 c == ']';
        });
        if (plain) connect += " " + endpoint;
      }
  }
  return "default-src 'self'; connect-src " + connect +
         "; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
}

HttpResponse AdminApi::dashboard(const std::string& file) {
  const DashboardAsset* asset = dashboard_asset(file);
  if (!asset) return error(404, "not_found", "no dashboard file " + json_quote(file.substr(0, 64)));
  HttpResponse r{200, std::string(asset->content_type), std::string(asset->body), {}};
  // The page runs only its own script; it may call other nodes (the leader).
  // No other site may frame it (a click on a framed "cancel" is the
  // operator's click: frame-ancestors, and X-Frame-Options for browsers
  // that predate it), and no address it came from leaks in a Referer.
  r.headers["Content-Security-Policy"] = dashboard_policy();
  r.headers["X-Frame-Options"] = "DENY";
  r.headers["Referrer-Policy"] = "no-referrer";
  r.headers["X-Content-Type-Options"] = "nosniff";
  r.headers["Cache-Control"] = "no-cache";
  return r;
}

}  // namespace baton::admin
