// `baton ctl`'s verb table: every verb with its words, arguments, flags and
// help, and how it calls the API and prints its answer. One verb per admin
// API operation; `apply` is in apply.cpp, the invocation in ctl.cpp.
#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <boost/json.hpp>
#include <boost/url/url.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "baton/ctl/api_client.h"
#include "baton/ctl/ctl.h"
#include "ctl_verbs.h"
#include "render.h"

namespace baton::ctl {

namespace json = boost::json;

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::optional<std::chrono::milliseconds> parse_duration(const std::string& s) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(s, &used);
  } catch (...) {
    return std::nullopt;
  }
  const std::string unit = s.substr(used);
  if (n <= 0) return std::nullopt;
  if (unit == "ms") return std::chrono::milliseconds(n);
  if (unit == "s" || unit.empty()) return std::chrono::seconds(n);
  if (unit == "m") return std::chrono::minutes(n);
  if (unit == "h") return std::chrono::hours(n);
  return std::nullopt;
}

namespace {

const std::vector<Flag> list_flags{{"--limit", true, "at most N items (1-500, default 50)"},
                                   {"--cursor", true, "start after this cursor (from a previous page)"},
                                   {"--all", false, "follow the cursor to the last page"}};

std::vector<Flag> with_list(std::vector<Flag> f) {
  f.insert(f.end(), list_flags.begin(), list_flags.end());
  return f;
}

/// GET a list, page by page when --all; prints a table or, with -o json,
/// {"items": [...], "next_cursor": ...}.
int list(Call& c, const std::string& path, std::vector<std::pair<std::string, std::string>> query,
         const std::vector<Column>& columns) {
  boost::urls::url u(path);
  for (const auto& [k, v] : query) u.params().append({k, v});
  if (auto l = c.flag("--limit")) u.params().append({"limit", *l});
  std::optional<std::string> cursor = c.flag("--cursor");
  json::array items;
  json::value next = nullptr;
  for (;;) {
    boost::urls::url page = u;
    if (cursor) page.params().set("cursor", *cursor);
    auto reply = c.api.call("GET", std::string(page.buffer()));
    if (reply.status != 200) return c.fail(reply);
    auto body = json::parse(reply.body).as_object();
    for (auto& v : body["items"].as_array()) items.push_back(v);
    next = body["next_cursor"];
    if (!c.has("--all") || !next.is_string()) break;
    cursor = std::string(next.as_string());
  }
  if (c.json_output())
    c.out << json::serialize(json::object{{"items", items}, {"next_cursor", next}}) << '\n';
  else {
    print_table(c.out, columns, items);
    if (next.is_string()) c.err << "(more: --cursor " << std::string(next.as_string()) << ", or --all)\n";
  }
  return exit_ok;
}

/// A call whose answer is printed as-is (-o json) or as key: value lines.
int simple(Call& c, const std::string& method, const std::string& path, const std::string& body = "") {
  auto reply = c.api.call(method, path, body);
  if (reply.status < 200 || reply.status >= 300) return c.fail(reply);
  if (c.json_output()) {
    c.out << reply.body << '\n';
  } else {
    auto v = json::parse(reply.body);
    if (v.is_object())
      print_object(c.out, v.as_object());
    else
      c.out << reply.body << '\n';
  }
  return exit_ok;
}

/// A bootstrap token's answer: the token alone on stdout (for a file or a
/// pipe), what it grants on stderr.
int print_bootstrap(Call& c, const ApiReply& reply) {
  if (reply.status != 201) return c.fail(reply);
  auto o = json::parse(reply.body).as_object();
  if (c.json_output())
    c.out << reply.body << '\n';
  else
    c.out << std::string(o["token"].as_string()) << '\n';
  c.err << "bootstrap token for worker '" << field(o, "worker_id") << "' (capacity " << field(o, "capacity")
        << ", labels " << json::serialize(o["labels"]) << "), expires " << field(o, "expires_at")
        << ": put it in the worker's enrollment_token_file; it is not shown again\n";
  return exit_ok;
}

bool terminal(const std::string& state) {
  return state == "SUCCEEDED" || state == "FAILED" || state == "TIMED_OUT" || state == "CANCELED";
}

/// --ttl as the body's ttl_seconds; false when it is not a duration.
bool put_ttl(Call& c, json::object& body) {
  auto t = c.flag("--ttl");
  if (!t) return true;
  auto d = parse_duration(*t);
  if (!d) return false;
  body["ttl_seconds"] = std::chrono::duration_cast<std::chrono::seconds>(*d).count();
  return true;
}

/// The whole of one stream from the node's log archive, a page at a time.
int archived_output(Call& c) {
  std::string query = "?stream=" + c.flag("--stream").value_or("stdout");
  if (auto a = c.flag("--attempt")) query += "&attempt=" + path_segment(*a);
  std::int64_t offset = 0;
  for (int page = 0; page < 1000000; ++page) {
    auto reply = c.api.call(
        "GET", "/api/v1/runs/" + path_segment(c.args.at(0)) + "/output" + query + "&offset=" + std::to_string(offset));
    if (reply.status != 200) return c.fail(reply);
    auto o = json::parse(reply.body).as_object();
    if (c.json_output())
      c.out << json::serialize(o) << '\n';
    else
      c.out << std::string_view(o.at("data").as_string());
    const std::int64_t next = o.at("next_offset").to_number<std::int64_t>();
    if (o.at("complete").as_bool() || next <= offset) break;
    offset = next;
  }
  c.out.flush();
  return exit_ok;
}

int logs(Call& c) {
  if (c.has("--archive")) {
    if (c.has("--follow")) return c.usage("--archive prints what the archive holds; it does not follow (-f)");
    return archived_output(c);
  }
  if (c.flag("--attempt") || c.flag("--stream")) return c.usage("--attempt and --stream go with --archive");
  const std::string path = "/api/v1/runs/" + path_segment(c.args.at(0));
  const bool follow = c.has("--follow");
  auto interval = parse_duration(c.flag("--interval").value_or("1s"));
  if (!interval) return c.usage("--interval must be a duration like 500ms, 2s or 1m");
  std::size_t shown = 0;
  bool at_line_start = true;
  for (;;) {
    auto reply = c.api.call("GET", path);
    if (reply.status != 200) return c.fail(reply);
    auto run = json::parse(reply.body).as_object();
    auto& chunks = run["logs"].as_array();
    for (; shown < chunks.size(); ++shown) {
      const auto& o = chunks[shown].as_object();
      const std::string chunk(o.at("chunk").as_string());
      if (c.json_output()) {
        c.out << json::serialize(o) << '\n';
        continue;
      }
      // Streamed output comes in pieces cut anywhere: printed as it is. A
      // finish's tail (no offset) from a worker that does not stream is
      // a whole, ended by a newline.
      const auto* start = o.if_contains("start_offset");
      const bool streamed = start && !start->is_null();
      // On a terminal, escape sequences a task printed (which could move
      // the cursor, retitle the window or rewrite what is on screen) are
      // shown as text, not obeyed.
      c.out << (c.terminal ? terminal_safe(chunk) : chunk);
      if (!streamed && !chunk.empty() && chunk.back() != '\n') c.out << '\n';
      at_line_start = chunk.empty() ? at_line_start : chunk.back() == '\n';
    }
    c.out.flush();
    const std::string state(run["state"].as_string());
    if (!follow || terminal(state)) {
      if (!at_line_start && !c.json_output()) c.out << '\n';
      c.out.flush();
    }
    if (!follow) return exit_ok;
    if (terminal(state)) {
      c.err << "run " << c.args.at(0) << " ended " << state << '\n';
      return state == "SUCCEEDED" ? exit_ok : exit_refused;
    }
    std::this_thread::sleep_for(*interval);
  }
}

int watch(Call& c) {
  auto interval = parse_duration(c.flag("--interval").value_or("2s"));
  if (!interval) return c.usage("--interval must be a duration like 500ms, 2s or 1m");
  int count = 0;
  if (auto n = c.flag("--count")) {
    try {
      count = std::stoi(*n);
    } catch (...) {
      count = -1;
    }
    if (count <= 0) return c.usage("--count must be a positive number");
  }
  for (int i = 0; count == 0 || i < count; ++i) {
    if (i > 0) std::this_thread::sleep_for(*interval);
    c.out << "--- "
          << iso_utc(
                 std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                     .count())
          << '\n';
    if (int rc = runs_list(c); rc != exit_ok) return rc;
    c.out.flush();
  }
  return exit_ok;
}

}  // namespace

std::vector<Verb> verbs() {
  const std::string runs_filters_help =
      "filters: --job --state --worker --key --since --until (unix seconds, 2h back, or RFC 3339)";
  const std::vector<Flag> run_filters{
      {"--job", true, "only runs of this job"},
      {"--state", true, "only runs in this state (PENDING, RUNNING, FAILED, ...)"},
      {"--worker", true, "only runs assigned to this worker"},
      {"--key", true, "only runs with this idempotency key"},
      {"--error", true, "only runs whose error code or message contains this text (any case)"},
      {"--since", true, "created at or after: unix seconds, a duration back (2h, 7d) or RFC 3339"},
      {"--until", true, "created before: the same forms"}};
  auto bulk_flags = [&](const char* what) {
    std::vector<Flag> f = run_filters;
    f.push_back({"--dry-run", false, std::string("list the runs it would ") + what + ", " + what + " none"});
    f.push_back({"--yes", false, std::string(what) + " every run the filter matches (without RUN)"});
    return f;
  };
  auto with = [](std::vector<Flag> a, const std::vector<Flag>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  return {
      {{"status"},
       "",
       "the node answering, who leads, at which epoch",
       {},
       0,
       0,
       [](Call& c) -> int { return simple(c, "GET", "/status"); }},
      // runs
      {{"runs", "list"},
       "",
       "runs, newest first (" + runs_filters_help + ")",
       with_list(run_filters),
       0,
       0,
       [](Call& c) -> int { return runs_list(c); }},
      {{"runs", "watch"},
       "",
       "runs list, again every --interval (default 2s) until Ctrl-C or --count",
       with(run_filters, {{"--interval", true, "time between refreshes (500ms, 2s, 1m)"},
                          {"--count", true, "stop after N refreshes"},
                          {"--limit", true, "at most N runs (default 50)"}}),
       0,
       0,
       watch},
      {{"runs", "show"},
       "RUN",
       "one run: attempts, transitions with epochs, dead letter",
       {},
       1,
       1,
       [](Call& c) -> int {
         auto reply = c.api.call("GET", "/api/v1/runs/" + path_segment(c.args[0]));
         if (reply.status != 200) return c.fail(reply);
         if (c.json_output())
           c.out << reply.body << '\n';
         else
           print_run(c.out, json::parse(reply.body).as_object(), false);
         return exit_ok;
       }},
      {{"runs", "cancel"},
       "[RUN]",
       "cancel a run (a running one through its worker); without RUN, every run a filter matches (--yes, or "
       "--dry-run to list them)",
       bulk_flags("cancel"),
       0,
       1,
       [](Call& c) -> int {
         if (c.args.empty()) return runs_bulk(c, "cancel");
         return simple(c, "POST", "/api/v1/runs/" + path_segment(c.args[0]) + "/cancel");
       }},
      {{"runs", "rerun"},
       "[RUN]",
       "a new run of the same job and payload as a finished run; without RUN, of every run a filter matches "
       "(--yes, or --dry-run to list them)",
       bulk_flags("rerun"),
       0,
       1,
       [](Call& c) -> int {
         if (c.args.empty()) return runs_bulk(c, "rerun");
         return simple(c, "POST", "/api/v1/runs/" + path_segment(c.args[0]) + "/rerun");
       }},
      {{"logs"},
       "RUN",
       "a run's output as the database keeps it (streamed while it runs); -f follows it until the run ends (exit 0 "
       "only if it SUCCEEDED); --archive prints one whole stream from the node's log archive",
       {{"--follow", false, "keep printing new output until the run ends (also -f)"},
        {"--interval", true, "how often to look for new output with -f (default 1s)"},
        {"--archive", false, "the full output from the node's log archive (not bounded by runtime.output_db_bytes)"},
        {"--attempt", true, "with --archive: which attempt (default the last one archived)"},
        {"--stream", true, "with --archive: stdout (default) or stderr"}},
       1,
       1,
       logs},
      // jobs
      {{"jobs", "list"},
       "",
       "job definitions: schedule, next fire, last run, paused",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/jobs", {}, job_columns()); }},
      {{"jobs", "show"},
       "JOB",
       "one job definition",
       {},
       1,
       1,
       [](Call& c) -> int {
         auto reply = c.api.call("GET", "/api/v1/jobs/" + path_segment(c.args[0]));
         if (reply.status != 200) return c.fail(reply);
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return exit_ok;
         }
         print_job(c.out, json::parse(reply.body).as_object());
         return exit_ok;
       }},
      {{"jobs", "export"},
       "[JOB...]",
       "the jobs (all, or those named) as a job file: `apply -f` of it changes nothing",
       {},
       0,
       -1,
       [](Call& c) -> int { return jobs_export(c); }},
      {{"jobs", "stats"},
       "JOB",
       "a job's runs finished in the last hour and day (by outcome, duration p50 / p95) and its backlog",
       {},
       1,
       1,
       [](Call& c) -> int {
         auto reply = c.api.call("GET", "/api/v1/jobs/" + path_segment(c.args[0]) + "/stats");
         if (reply.status != 200) return c.fail(reply);
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return exit_ok;
         }
         print_job_stats(c.out, json::parse(reply.body).as_object());
         return exit_ok;
       }},
      {{"jobs", "trigger"},
       "JOB",
       "create a run of a job now (or one that starts at --at); prints its id",
       {{"--key", true, "an idempotency key: no second active run with it"},
        {"--at", true, "a one-off at this time (ISO 8601, e.g. 2026-12-01T09:00:00Z; without an offset, UTC)"},
        {"--param", true, "a parameter NAME=VALUE (repeatable; the value is a string)"},
        {"--parameters", true, "the parameters as a JSON object"},
        {"--priority", true, "the run's own priority, from -1000 up to the job's"},
        {"--run-timeout", true, "the run's own timeout (90s, 5m; at most the job's timeout)"}},
       1,
       1,
       [](Call& c) -> int {
         json::object params;
         if (auto all = c.flag("--parameters")) {
           boost::system::error_code ec;
           auto v = json::parse(*all, ec);
           if (ec || !v.is_object()) return c.usage("--parameters must be a JSON object");
           params = v.as_object();
         }
         if (auto list = c.flag("--param")) {
           std::istringstream lines(*list);
           for (std::string p; std::getline(lines, p);) {
             auto eq = p.find('=');
             if (eq == std::string::npos || eq == 0) return c.usage("--param takes NAME=VALUE, got '" + p + "'");
             params[p.substr(0, eq)] = p.substr(eq + 1);
           }
         }
         json::object request;
         if (!params.empty()) request["parameters"] = params;
         if (auto at = c.flag("--at")) request["run_at"] = *at;
         if (auto p = c.flag("--priority")) {
           try {
             std::size_t used = 0;
             request["priority"] = std::stoi(*p, &used);
             if (used != p->size()) throw std::invalid_argument(*p);
           } catch (const std::exception&) {
             return c.usage("--priority takes an integer, got '" + *p + "'");
           }
         }
         if (auto t = c.flag("--run-timeout")) {
           auto d = parse_duration(*t);
           if (!d) return c.usage("--run-timeout takes a duration such as 90s or 5m, got '" + *t + "'");
           request["timeout_ms"] = d->count();
         }
         const std::string body = request.empty() ? std::string() : json::serialize(request);
         auto reply = c.api.call("POST", "/api/v1/jobs/" + path_segment(c.args[0]) + "/trigger", body,
                                 c.flag("--key").value_or(""));
         if (reply.status != 201 && reply.status != 200) return c.fail(reply);
         c.out << (c.json_output() ? reply.body : std::string(field(json::parse(reply.body).as_object(), "run_id")))
               << '\n';
         return exit_ok;
       }},
      {{"jobs", "trigger-batch"},
       "FILE",
       "create many runs in one call: FILE (- for stdin) holds a JSON array of {job, idempotency_key, parameters, "
       "run_at, priority, timeout_ms}; all are created or (one refused) none; prints each run's id",
       {},
       1,
       1,
       [](Call& c) -> int {
         std::string text;
         if (c.args[0] == "-") {
           text.assign(std::istreambuf_iterator<char>(std::cin), {});
         } else {
           std::ifstream in(c.args[0]);
           if (!in) return c.usage("cannot read " + c.args[0]);
           text.assign(std::istreambuf_iterator<char>(in), {});
         }
         boost::system::error_code ec;
         auto v = json::parse(text, ec);
         if (ec || !v.is_array()) return c.usage(c.args[0] + " must hold a JSON array of runs");
         auto reply = c.api.call("POST", "/api/v1/triggers", json::serialize(json::object{{"runs", v}}));
         if (reply.status != 201 && reply.status != 200) return c.fail(reply);
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return exit_ok;
         }
         const json::value answer = json::parse(reply.body);
         for (const auto& r : answer.as_object().at("runs").as_array()) c.out << field(r.as_object(), "run_id") << '\n';
         return exit_ok;
       }},
      {{"jobs", "pause"},
       "JOB",
       "its schedule creates no runs until resumed",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/jobs/" + path_segment(c.args[0]) + "/pause"); }},
      {{"jobs", "resume"},
       "JOB",
       "resume a paused job",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/jobs/" + path_segment(c.args[0]) + "/resume"); }},
      {{"jobs", "delete"},
       "JOB",
       "delete a job (its runs and history stay)",
       {{"--version", true, "only if the job is still at this version"}},
       1,
       1,
       [](Call& c) -> int {
         std::string path = "/api/v1/jobs/" + path_segment(c.args[0]);
         if (auto v = c.flag("--version")) path += "?version=" + *v;
         return simple(c, "DELETE", path);
       }},
      {{"apply"},
       "",
       "make the jobs and webhooks match YAML files: create and update (--prune: delete the rest)",
       {{"--file", true, "a job file or a directory of *.yaml files (also -f; repeatable)"},
        {"--prune", false, "delete jobs no file names (and webhooks, when a file has a webhooks: list)"},
        {"--dry-run", false, "print what would change, change nothing"}},
       0,
       0,
       apply},
      // workers
      {{"workers", "list"},
       "",
       "workers: state, hold, capacity, in flight, last heartbeat",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/workers", {}, worker_columns()); }},
      {{"workers", "show"},
       "WORKER",
       "one worker and the runs it holds",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "GET", "/api/v1/workers/" + path_segment(c.args[0])); }},
      {{"workers", "drain"},
       "WORKER",
       "finish in-flight runs, take no new ones",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/drain"); }},
      {{"workers", "resume"},
       "WORKER",
       "take a drained or evicted worker back",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/resume"); }},
      {{"workers", "evict"},
       "WORKER",
       "disconnect it and refuse it until resumed",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/evict"); }},
      // worker identity (docs/security.md, "Worker identity")
      {{"workers", "enroll"},
       "WORKER",
       "grant a worker id labels and capacity; prints its bootstrap token (single use, expiring), once",
       {{"--capacity", true, "the most slots its hello may claim"},
        {"--labels", true, "k=v,k2=v2: the only labels its hello may claim"},
        {"--ttl", true, "the bootstrap token expires after this (1m-720h; default 1h)"}},
       1,
       1,
       [](Call& c) -> int {
         auto capacity = c.flag("--capacity");
         if (!capacity) return c.usage("workers enroll needs --capacity N");
         json::object body;
         try {
           std::size_t used = 0;
           body["capacity"] = std::stoll(*capacity, &used);
           if (used != capacity->size()) throw std::invalid_argument("trailing");
         } catch (...) {
           return c.usage("--capacity must be a whole number, got '" + *capacity + "'");
         }
         json::object labels;
         if (auto l = c.flag("--labels")) {
           for (std::size_t at = 0; at <= l->size();) {
             auto comma = l->find(',', at);
             if (comma == std::string::npos) comma = l->size();
             const std::string pair = l->substr(at, comma - at);
             const auto eq = pair.find('=');
             if (eq == std::string::npos || eq == 0) return c.usage("--labels takes k=v,k2=v2; got '" + pair + "'");
             labels[pair.substr(0, eq)] = pair.substr(eq + 1);
             at = comma + 1;
           }
         }
         body["labels"] = labels;
         if (!put_ttl(c, body)) return c.usage("--ttl takes a duration like 30m or 2h, got '" + *c.flag("--ttl") + "'");
         return print_bootstrap(c, c.api.call("POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/enrollments",
                                              json::serialize(body)));
       }},
      {{"workers", "rotate"},
       "WORKER",
       "a new bootstrap token with the worker's grant; its old credential is revoked when the worker enrolls with it",
       {{"--ttl", true, "the bootstrap token expires after this (default 1h)"}},
       1,
       1,
       [](Call& c) -> int {
         json::object body;
         if (!put_ttl(c, body)) return c.usage("--ttl takes a duration like 30m or 2h, got '" + *c.flag("--ttl") + "'");
         return print_bootstrap(
             c, c.api.call("POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/rotate", json::serialize(body)));
       }},
      {{"workers", "revoke"},
       "WORKER",
       "revoke its credential and unused bootstrap tokens; every node closes its sessions within seconds",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/revoke"); }},
      {{"workers", "credentials"},
       "",
       "worker credentials and unused bootstrap tokens (never the tokens)",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/worker-credentials", {}, credential_columns()); }},
      // dead letters
      {{"dead-letters", "list"},
       "",
       "runs that used up their attempts, newest first",
       with_list({{"--status", true, "pending, acknowledged, replayed or closed"}}),
       0,
       0,
       [](Call& c) -> int {
         std::vector<std::pair<std::string, std::string>> q;
         if (auto s = c.flag("--status")) q.emplace_back("status", *s);
         return list(c, "/api/v1/dead-letters", q, dead_letter_columns());
       }},
      {{"dead-letters", "show"},
       "ID",
       "one dead letter",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "GET", "/api/v1/dead-letters/" + path_segment(c.args[0])); }},
      {{"dead-letters", "triage"},
       "ID",
       "set its triage status and notes",
       {{"--status", true, "pending, acknowledged, replayed or closed"}, {"--notes", true, "free text"}},
       1,
       1,
       [](Call& c) -> int {
         auto status = c.flag("--status");
         if (!status) return c.usage("triage needs --status");
         json::object body{{"status", *status}};
         if (auto n = c.flag("--notes")) body["notes"] = *n;
         return simple(c, "POST", "/api/v1/dead-letters/" + path_segment(c.args[0]) + "/triage", json::serialize(body));
       }},
      {{"dead-letters", "replay"},
       "ID...",
       "replay one or many: a new run of each one's job",
       {},
       1,
       -1,
       [](Call& c) -> int {
         if (c.args.size() == 1)
           return simple(c, "POST", "/api/v1/dead-letters/" + path_segment(c.args[0]) + "/replay");
         json::array ids;
         for (const auto& a : c.args) {
           try {
             ids.push_back(std::stoll(a));
           } catch (...) {
             return c.usage("dead letter ids are numbers, got '" + a + "'");
           }
         }
         auto reply = c.api.call("POST", "/api/v1/dead-letters/replay", json::serialize(json::object{{"ids", ids}}));
         if (reply.status != 200) return c.fail(reply);
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return exit_ok;
         }
         int rc = exit_ok;
         for (const auto& r : json::parse(reply.body).at("results").as_array()) {
           const auto& o = r.as_object();
           if (o.contains("run_id"))
             c.out << "dead letter " << field(o, "dead_letter_id") << ": replayed as run " << field(o, "run_id")
                   << '\n';
           else
             c.out << "dead letter " << field(o, "dead_letter_id") << ": " << field(o, "message") << '\n',
                 rc = exit_refused;
         }
         return rc;
       }},
      {{"why"},
       "JOB TIME",
       "why a cron slot of a job did or did not run (TIME: ISO 8601 like 2026-03-29T01:30:00Z, or a wall clock in "
       "the job's zone)",
       {},
       2,
       2,
       [](Call& c) -> int {
         boost::urls::url u("/api/v1/jobs/" + path_segment(c.args[0]) + "/why");
         u.params().append({"at", c.args[1]});
         auto reply = c.api.call("GET", std::string(u.buffer()));
         if (reply.status != 200) return c.fail(reply);
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return exit_ok;
         }
         const auto o = json::parse(reply.body).as_object();
         c.out << "slot " << std::string(o.at("slot").as_string())
               << (o.at("is_slot").as_bool() ? "" : " (the first slot at or after TIME)") << '\n'
               << std::string(o.at("explanation").as_string()) << '\n';
         const auto& decisions = o.at("decisions").as_array();
         if (!decisions.empty()) {
           c.out << '\n';
           print_table(c.out, decision_columns(), decisions);
         }
         return exit_ok;
       }},
      // leadership, nodes, audit
      {{"nodes"},
       "",
       "coordinator nodes: role, whether it leads, last heartbeat",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/nodes", {}, node_columns()); }},
      {{"epochs"},
       "",
       "who led each epoch, when, and how it ended",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/epochs", {}, epoch_columns()); }},
      {{"leader", "handover"},
       "",
       "hand leadership over (audited): the leader stops creating and assigning, finishes its writes in flight "
       "and releases its lease for NODE (--to; none: any other node), which leads at once",
       {{"--to", true, "the node to lead next"}},
       0,
       0,
       [](Call& c) -> int {
         json::object body;
         if (auto to = c.flag("--to")) body["to"] = *to;
         return simple(c, "POST", "/api/v1/leader/handover", json::serialize(body));
       }},
      {{"incident", "export"},
       "",
       "the incident journal of the node asked (--addr): every input of its leader's decision core in each epoch it "
       "led that overlaps the window, from the epoch's start; `baton-sim --replay FILE` replays it",
       {{"--from", true, "start of the window: unix seconds, 15m back, or an RFC 3339 time (default: 15m)"},
        {"--to", true, "end of the window (default: now)"},
        {"--file", true, "write it here (default: stdout)"}},
       0,
       0,
       incident_export},
      {{"events", "list"},
       "",
       "events newest first, with the runs made from each",
       with_list({{"--kind", true, "only events of this kind"}}),
       0,
       0,
       [](Call& c) -> int {
         std::vector<std::pair<std::string, std::string>> q;
         if (auto k = c.flag("--kind")) q.emplace_back("kind", *k);
         return list(c, "/api/v1/events", q, event_columns());
       }},
      {{"events", "post"},
       "KIND",
       "record an event: each job subscribed to KIND (on_events) gets one run",
       {{"--payload", true, "a JSON object the runs receive"},
        {"--dedupe-key", true, "record the event only once for this key"}},
       1,
       1,
       [](Call& c) -> int {
         json::object body{{"kind", c.args[0]}};
         if (auto p = c.flag("--payload")) {
           boost::system::error_code ec;
           auto v = json::parse(*p, ec);
           if (ec || !v.is_object()) {
             c.err << "baton ctl: usage: --payload must be a JSON object\n";
             return exit_usage;
           }
           body["payload"] = v;
         }
         if (auto k = c.flag("--dedupe-key")) body["dedupe_key"] = *k;
         return simple(c, "POST", "/api/v1/events", json::serialize(body));
       }},
      {{"audit"},
       "",
       "the audit log, newest first",
       with_list({{"--subject", true, "only this subject (job:NAME)"}}),
       0,
       0,
       [](Call& c) -> int {
         std::vector<std::pair<std::string, std::string>> q;
         if (auto s = c.flag("--subject")) q.emplace_back("subject", *s);
         return list(c, "/api/v1/audit", q, audit_columns());
       }},
      {{"version"},
       "",
       "this ctl's version and the answering node's",
       {},
       0,
       0,
       [](Call& c) -> int {
         auto reply = c.api.call("GET", "/status");
         const std::string node =
             reply.status == 200 ? field(json::parse(reply.body).as_object(), "version") : std::string("-");
         if (c.json_output()) {
           c.out << json::serialize(json::object{{"client", BATON_VERSION}, {"server", node}}) << '\n';
         } else {
           c.out << "client: baton ctl " << BATON_VERSION << "\nserver: " << node
                 << (reply.status == 200 ? " (" + reply.answered_by + ")" : "") << '\n';
         }
         return reply.status == 200 ? exit_ok : c.fail(reply);
       }},
      // the history checker in production (docs/assurance.md)
      {{"verify", "status"},
       "",
       "the history checker's sweep: runs checked, the last sweep, violations per invariant, and the violations "
       "(newest first); exit 1 while one is not acknowledged",
       {{"--open", false, "only the violations not acknowledged"},
        {"--limit", true, "violations shown (default 50, at most 1000)"}},
       0,
       0,
       [](Call& c) -> int {
         boost::urls::url u("/api/v1/verify");
         if (c.has("--open")) u.params().append({"open", "true"});
         if (auto l = c.flag("--limit")) u.params().append({"limit", *l});
         auto reply = c.api.call("GET", std::string(u.buffer()));
         if (reply.status != 200) return c.fail(reply);
         const auto o = json::parse(reply.body).as_object();
         const bool open = o.at("violations_open").to_number<std::int64_t>() > 0;
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return open ? exit_refused : exit_ok;
         }
         c.out << "runs checked: " << field(o, "runs_checked") << " in " << field(o, "sweeps") << " sweeps; last sweep "
               << field(o, "swept_at") << " by " << field(o, "node_id") << " (epoch " << field(o, "epoch")
               << ")\nviolations: " << field(o, "violations_total") << " recorded, " << field(o, "violations_open")
               << " not acknowledged\n";
         for (const auto& [name, n] : o.at("by_invariant").as_object())
           c.out << "  " << std::string(name) << ": " << json::serialize(n) << '\n';
         const auto& list = o.at("violations").as_array();
         if (!list.empty()) {
           c.out << '\n';
           print_table(c.out, violation_columns(), list);
         }
         return open ? exit_refused : exit_ok;
       }},
      {{"verify", "acknowledge"},
       "ID",
       "acknowledge every violation up to ID (audited): the dashboard's banner no longer shows them",
       {},
       1,
       1,
       [](Call& c) -> int {
         std::int64_t id = 0;
         try {
           std::size_t used = 0;
           id = std::stoll(c.args[0], &used);
           if (used != c.args[0].size() || id < 1) id = 0;
         } catch (const std::exception&) {
           id = 0;
         }
         if (id == 0) return c.usage("ID must be a violation id (a positive integer), got '" + c.args[0] + "'");
         return simple(c, "POST", "/api/v1/verify/acknowledge", json::serialize(json::object{{"through_id", id}}));
       }},
      // webhooks (docs/webhooks.md; defined with `apply`)
      {{"webhooks", "list"},
       "",
       "webhooks: url, events, jobs, and their deliveries by state (never the secret)",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/webhooks", {}, webhook_columns()); }},
      {{"webhooks", "show"},
       "NAME",
       "one webhook",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "GET", "/api/v1/webhooks/" + path_segment(c.args[0])); }},
      {{"webhooks", "deliveries"},
       "NAME",
       "its deliveries, newest first: event id, kind, state, attempts, next attempt, last error",
       with_list({{"--state", true, "pending, delivered or failed"}}),
       1,
       1,
       [](Call& c) -> int {
         std::vector<std::pair<std::string, std::string>> q;
         if (auto s = c.flag("--state")) q.emplace_back("state", *s);
         return list(c, "/api/v1/webhooks/" + path_segment(c.args[0]) + "/deliveries", q, delivery_columns());
       }},
      {{"webhooks", "ping"},
       "NAME",
       "queue a test delivery (kind ping) to it",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/webhooks/" + path_segment(c.args[0]) + "/ping"); }},
      {{"webhooks", "redeliver"},
       "DELIVERY_ID",
       "send a delivery again (the same event id), whatever its state",
       {},
       1,
       1,
       [](Call& c) -> int {
         return simple(c, "POST", "/api/v1/webhook-deliveries/" + path_segment(c.args[0]) + "/redeliver");
       }},
      {{"webhooks", "delete"},
       "NAME",
       "delete a webhook and its deliveries",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "DELETE", "/api/v1/webhooks/" + path_segment(c.args[0])); }},
      // settings and tokens
      {{"settings", "get"},
       "[KEY]",
       "settings: value, who set it, what it does",
       {},
       0,
       1,
       [](Call& c) -> int {
         auto reply = c.api.call("GET", "/api/v1/settings");
         if (reply.status != 200) return c.fail(reply);
         auto all = json::parse(reply.body).as_object();
         if (!c.args.empty()) {
           auto* one = all.if_contains(c.args[0]);
           if (!one) return c.error(exit_not_found, "no setting '" + c.args[0] + "'");
           // the value in force: unset means the node config's
           const auto& o = one->as_object();
           c.out << (c.json_output() ? json::serialize(*one) : field(o, o.at("value").is_null() ? "default" : "value"))
                 << '\n';
           return exit_ok;
         }
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return exit_ok;
         }
         json::array items;
         for (auto& kv : all) {
           auto o = kv.value().as_object();
           o["key"] = kv.key();
           items.push_back(o);
         }
         print_table(c.out,
                     {{"KEY", [](const json::object& o) { return field(o, "key"); }},
                      {"VALUE",
                       [](const json::object& o) {
                         // unset: the node config's value, said so
                         return o.at("value").is_null() ? field(o, "default") + " (node config)" : field(o, "value");
                       }},
                      {"UPDATED BY", [](const json::object& o) { return field(o, "updated_by"); }},
                      {"UPDATED", [](const json::object& o) { return field(o, "updated_at"); }},
                      {"EFFECT", [](const json::object& o) { return field(o, "effect"); }}},
                     items);
         return exit_ok;
       }},
      {{"settings", "set"},
       "KEY VALUE",
       "set a setting (VALUE is JSON: true, false, 3, [\"pool=gpu\"]; null: back to the node config)",
       {},
       2,
       2,
       [](Call& c) -> int {
         boost::system::error_code ec;
         auto value = json::parse(c.args[1], ec);
         if (ec) value = json::value(c.args[1]);  // a bare word is a string
         return simple(c, "PUT", "/api/v1/settings/" + path_segment(c.args[0]),
                       json::serialize(json::object{{"value", value}}));
       }},
      {{"token", "create"},
       "NAME",
       "a token for a person or a program; printed once",
       {{"--role", true, "read, operate or admin"},
        {"--ttl", true, "the token expires after this (1m to ten years; default: it does not expire)"}},
       1,
       1,
       [](Call& c) -> int {
         auto role = c.flag("--role");
         if (!role) return c.usage("token create needs --role read|operate|admin");
         json::object body{{"name", c.args[0]}, {"role", *role}};
         if (!put_ttl(c, body)) return c.usage("--ttl must be a duration like 30m, 12h or 720h");
         auto reply = c.api.call("POST", "/api/v1/tokens", json::serialize(body));
         if (reply.status != 201) return c.fail(reply);
         auto o = json::parse(reply.body).as_object();
         if (c.json_output())
           c.out << reply.body << '\n';
         else
           c.out << std::string(o["token"].as_string()) << '\n';
         c.err << "token " << field(o, "id") << " '" << field(o, "name") << "' (" << field(o, "role")
               << "): keep it now, it is not shown again\n";
         return exit_ok;
       }},
      {{"token", "list"},
       "",
       "tokens (never the token itself)",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/tokens", {}, token_columns()); }},
      {{"token", "revoke"},
       "ID",
       "revoke a token (every node refuses it within 5 s)",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/tokens/" + path_segment(c.args[0]) + "/revoke"); }},
      {{"config", "get-contexts"},
       "",
       "the contexts of the config file, the current one marked *",
       {},
       0,
       0,
       [](Call& c) -> int { return config_get_contexts(c); }},
      {{"config", "current-context"},
       "",
       "the context in use (--context, BATON_CONTEXT or the file's current_context)",
       {},
       0,
       0,
       [](Call& c) -> int { return config_current_context(c); }},
      {{"config", "use-context"},
       "NAME",
       "make NAME the config file's current context (only its current_context line is rewritten)",
       {},
       1,
       1,
       [](Call& c) -> int { return config_use_context(c); }},
      {{"completion"},
       "SHELL",
       "print a completion script (SHELL: bash, zsh or fish): source <(baton ctl completion bash)",
       {},
       1,
       1,
       [](Call& c) -> int {
         if (c.args[0] != "bash" && c.args[0] != "zsh" && c.args[0] != "fish")
           return c.usage("SHELL must be bash, zsh or fish, got '" + c.args[0] + "'");
         c.out << completion_script(verbs(), c.args[0]);
         return exit_ok;
       }},
  };
}

std::vector<std::string> verb_names() {
  std::vector<std::string> out;
  for (const auto& v : verbs()) out.push_back(joined(v.words));
  return out;
}

std::optional<std::int64_t> time_filter(const std::string& v, std::int64_t now_unix) {
  if (v.empty()) return std::nullopt;
  if (std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) && v.size() <= 12)
    return std::stoll(v);  // unix seconds
  // A duration back from now: 90s, 15m, 2h, 7d.
  if (v.back() == 'd' && v.size() > 1 &&
      std::all_of(v.begin(), v.end() - 1, [](char ch) { return ch >= '0' && ch <= '9'; }) && v.size() <= 6)
    return now_unix - std::stoll(v.substr(0, v.size() - 1)) * 86400;
  if (auto d = parse_duration(v)) return now_unix - std::chrono::duration_cast<std::chrono::seconds>(*d).count();
  // RFC 3339: 2026-11-29T03:00:00Z, with fractions and an offset allowed.
  int y, mo, da, h, mi, s, n = 0;
  if (std::sscanf(v.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &da, &h, &mi, &s, &n) != 6 || n != 19)
    return std::nullopt;
  std::size_t at = 19;
  if (at < v.size() && v[at] == '.')
    for (++at; at < v.size() && v[at] >= '0' && v[at] <= '9';) ++at;
  std::int64_t offset = 0;
  if (at < v.size() && (v[at] == 'Z' || v[at] == 'z')) {
    ++at;
  } else if (at + 6 == v.size() && (v[at] == '+' || v[at] == '-') && v[at + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(v.c_str() + at + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offset = (v[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    at += 6;
  } else {
    return std::nullopt;  // a time without its zone is ambiguous
  }
  if (at != v.size() || mo < 1 || mo > 12 || da < 1 || da > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  const auto day = std::chrono::sys_days(std::chrono::year(y) / mo / da);
  return day.time_since_epoch().count() * 86400LL + h * 3600 + mi * 60 + s - offset;
}

std::optional<int> run_filters(Call& c, std::vector<std::pair<std::string, std::string>>& q) {
  for (auto [flag, param] : std::vector<std::pair<std::string, std::string>>{{"--job", "job"},
                                                                             {"--state", "state"},
                                                                             {"--worker", "worker"},
                                                                             {"--key", "idempotency_key"},
                                                                             {"--error", "error"}})
    if (auto v = c.flag(flag)) q.emplace_back(param, *v);
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (auto [flag, param] :
       std::vector<std::pair<std::string, std::string>>{{"--since", "created_after"}, {"--until", "created_before"}}) {
    auto v = c.flag(flag);
    if (!v) continue;
    auto t = time_filter(*v, now);
    if (!t)
      return c.usage(flag +
                     " must be unix seconds, a duration back from now (90s, 15m, 2h, 7d) or an RFC 3339 time "
                     "(2026-11-29T03:00:00Z), got '" +
                     *v + "'");
    q.emplace_back(param, std::to_string(*t));
  }
  return std::nullopt;
}

/// `incident export`: the node's journal for the window into a file (or
/// stdout), ready for `baton-sim --replay`.
int incident_export(Call& c) {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::int64_t window[2] = {now - 900, now};
  const char* flags[2] = {"--from", "--to"};
  for (int i = 0; i < 2; ++i) {
    auto v = c.flag(flags[i]);
    if (!v) continue;
    auto t = time_filter(*v, now);
    if (!t)
      return c.usage(std::string(flags[i]) +
                     " must be unix seconds, a duration back from now (90s, 15m, 2h) or an RFC 3339 time "
                     "(2026-11-29T03:00:00Z), got '" +
                     *v + "'");
    window[i] = *t;
  }
  if (window[0] > window[1]) return c.usage("--from is after --to");
  auto reply =
      c.api.call("GET", "/api/v1/incident?from=" + std::to_string(window[0]) + "&to=" + std::to_string(window[1]));
  if (reply.status != 200) return c.fail(reply);
  auto body = json::parse(reply.body).as_object();
  const std::string journal(body["journal"].as_string());
  const auto file = c.flag("--file");
  if (file) {
    // 0600: a journal holds task output and run parameters (security
    // review N-L3); never written through a link.
    const int fd = ::open(file->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool written = fd >= 0;
    for (std::size_t at = 0; written && at < journal.size();) {
      const ssize_t n = ::write(fd, journal.data() + at, journal.size() - at);
      written = n > 0;
      at += written ? static_cast<std::size_t>(n) : 0;
    }
    if (fd >= 0 && ::close(fd) != 0) written = false;
    if (!written) return c.error(exit_refused, "cannot write " + *file);
  } else {
    c.out << journal;
  }
  c.err << "node " << field(body, "node") << ": " << field(body, "books") << " book(s), " << field(body, "lines")
        << " lines, " << journal.size() << " bytes" << (file ? " in " + *file : std::string())
        << "; replay: baton-sim --replay " << (file ? *file : std::string("FILE")) << "\n";
  return exit_ok;
}

int runs_list(Call& c) {
  std::vector<std::pair<std::string, std::string>> q;
  if (auto bad = run_filters(c, q)) return *bad;
  return list(c, "/api/v1/runs", q, run_columns());
}

std::optional<std::string> Call::flag(const std::string& name) const {
  auto it = flags.find(name);
  if (it == flags.end()) return std::nullopt;
  return it->second;
}

}  // namespace baton::ctl
