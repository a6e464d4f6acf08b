#include "baton/leader/admin_api.h"

#include <boost/json.hpp>
#include <charconv>

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
      run_created_(std::move(run_created)) {}

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

  const std::string runs_prefix = "/api/v1/runs/";
  const std::string jobs_prefix = "/api/v1/jobs/";
  const bool mutation = r.method == "POST" || r.method == "PUT" || r.method == "DELETE" || r.method == "PATCH";
  if (mutation) {
    auto auth = r.headers.find("authorization");
    std::string presented = auth == r.headers.end() ? "" : auth->second;
    if (presented.rfind("Bearer ", 0) != 0 || !constant_time_equal(presented.substr(7), admin_token_))
      return error(401, "unauthenticated", "mutations need 'Authorization: Bearer <admin token>'");
  }
  if (path.rfind(runs_prefix, 0) == 0) {
    std::string rest = path.substr(runs_prefix.size());
    auto slash = rest.find('/');
    auto id = parse_id(rest.substr(0, slash));
    if (!id) return error(400, "bad_request", "run id must be a positive integer, got '" + rest.substr(0, slash) + "'");
    if (slash == std::string::npos && r.method == "GET") return run(*id);
    if (rest.substr(slash == std::string::npos ? rest.size() : slash) == "/cancel" && r.method == "POST") {
      NodeStatus s = status_();
      if (s.role != "leader")
        return {307,
                "application/json",
                json::serialize(json::object{{"code", "not_leader"},
                                             {"message", "send this to the leader"},
                                             {"leader_endpoint", s.leader_endpoint}}),
                {{"Location", "http://" + s.leader_endpoint + r.target}}};
      if (!cancel_(*id, "canceled through the API")) return error(503, "not_leader", "this node is not leading now");
      std::lock_guard lock(store_mutex_);
      (void)store_.audit("admin", "run.cancel", "run:" + std::to_string(*id), Epoch{s.epoch}, "{}");
      return ok_json(json::object{{"run_id", *id}, {"status", "cancel requested"}}, 202);
    }
    return error(404, "not_found", "no route " + r.method + " " + path);
  }
  if (path.rfind(jobs_prefix, 0) == 0) {
    std::string rest = path.substr(jobs_prefix.size());
    auto slash = rest.find('/');
    std::string name = rest.substr(0, slash);
    if (slash != std::string::npos && rest.substr(slash) == "/trigger" && r.method == "POST") {
      if (!valid_name(name)) return error(400, "bad_request", "job name '" + name.substr(0, 64) + "' is not valid");
      return trigger(name, r, status_());
    }
    return error(404, "not_found", "no route " + r.method + " " + path);
  }
  return error(404, "not_found", "no route " + r.method + " " + path);
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
