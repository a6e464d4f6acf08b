// `baton ctl`'s verbs of jobs: list, show, export, stats, trigger, pause, resume, delete, apply.
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

std::vector<Verb> job_verbs() {
  return {
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
         const std::string id = field(json::parse(reply.body).as_object(), "run_id");
         c.out << (c.json_output() ? reply.body : id) << '\n';
         // The key named a run already: no new one was made. Said on stderr,
         // so a script reading the id on stdout reads the same either way.
         if (reply.status == 200 && !c.json_output())
           c.err << "existing: the key names run " << id << ", made earlier; no new run\n";
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
  };
}

}  // namespace baton::ctl::kit
