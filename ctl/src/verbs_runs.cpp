// `baton ctl`'s verbs of runs: status, runs, logs, dead letters, why, events (verb_table.cpp
// puts the families together).
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
#include "verb_kit.h"

namespace baton::ctl::kit {

namespace json = boost::json;

std::vector<Verb> run_verbs() {
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
  };
}

std::vector<Verb> dead_letter_verbs() {
  return {
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
  };
}

std::vector<Verb> event_verbs() {
  return {
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
  };
}

}  // namespace baton::ctl::kit
