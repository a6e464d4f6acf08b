// A stored job definition written back as a job file's entry (`baton ctl
// jobs export`, GET /api/v1/jobs/{name}/document): the inverse of
// parse_job_document, so that exporting a job and applying the result
// changes nothing. Keys at their defaults are left out, as a person writes
// a file; durations are written in milliseconds, which the reader takes.
#include <boost/json.hpp>

#include "baton/admin/job_files.h"
#include "baton/protocol/codec.h"
#include "baton/protocol/vocabulary.h"

namespace baton::admin {

namespace json = boost::json;

namespace {

std::string ms(std::int64_t v) { return std::to_string(v) + "ms"; }

json::value parsed_or_empty(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  return ec ? json::value(json::object{}) : v;
}

/// One task as a job file writes it. Resources the job gave every PROGRAM
/// task are written on each task (the same definition either way).
json::object task_document(const protocol::Task& t) {
  json::object o;
  switch (t.kind) {
    case protocol::TaskKind::program: o["kind"] = "PROGRAM"; break;
    case protocol::TaskKind::sql: o["kind"] = "SQL"; break;
    case protocol::TaskKind::builtin: o["kind"] = "BUILTIN"; break;
  }
  if (!t.name.empty()) o["name"] = t.name;
  if (!t.command.empty()) {
    // A script stored with its parameters quoted (shell_quote) is written
    // as stored: it substitutes nothing any more, so it needs no flag.
    json::array argv;
    for (const auto& a : t.command) argv.emplace_back(a);
    o["command"] = std::move(argv);
  }
  if (!t.env.empty()) {
    json::object env;
    for (const auto& [k, v] : t.env) env[k] = v;
    o["env"] = std::move(env);
  }
  if (!t.cwd.empty()) o["cwd"] = t.cwd;
  if (!t.connection.empty()) o["connection"] = t.connection;
  if (!t.sql.empty()) o["sql"] = t.sql;
  if (t.kind == protocol::TaskKind::builtin) o["builtin"] = protocol::to_string(t.builtin);
  if (!t.argument.empty()) o["argument"] = t.argument;
  if (t.ignore_error)
    o["ignore_error"] = true;  // the older form: on_error ignore with it
  else if (t.on_error == protocol::TaskOnError::continue_)
    o["on_error"] = "continue";
  else if (t.on_error == protocol::TaskOnError::ignore)
    o["on_error"] = "ignore";
  if (!t.resources.empty()) {
    json::object r;
    if (t.resources.memory_bytes) r["memory"] = std::to_string(t.resources.memory_bytes);
    if (t.resources.pids) r["pids"] = t.resources.pids;
    if (t.resources.cpu_millis) {
      // Thousandths of a CPU as a decimal: 1500 -> "1.5", 250 -> "0.25".
      std::string cpu = std::to_string(t.resources.cpu_millis / 1000);
      if (auto frac = t.resources.cpu_millis % 1000) {
        std::string f = std::to_string(1000 + frac).substr(1);
        while (f.back() == '0') f.pop_back();
        cpu += "." + f;
      }
      r["cpu"] = cpu;
    }
    o["resources"] = std::move(r);
  }
  if (t.timeout_ms > 0) o["timeout"] = ms(t.timeout_ms);
  if (!t.parameters.empty()) {
    json::object p;
    for (const auto& [k, v] : t.parameters) p[k] = v;
    o["parameters"] = std::move(p);
  }
  if (!t.run_as.empty()) o["run_as"] = t.run_as;
  return o;
}

}  // namespace

boost::json::object job_document(const store::JobDefinition& job) {
  const store::JobDefinition defaults;
  json::object o;
  o["name"] = job.name;
  if (job.schedule) o["schedule"] = *job.schedule;
  if (job.time_zone != defaults.time_zone) o["time_zone"] = job.time_zone;
  if (!job.live) o["live"] = false;
  if (job.max_attempts != defaults.max_attempts) o["max_attempts"] = job.max_attempts;
  if (job.priority != defaults.priority) o["priority"] = job.priority;
  if (job.timeout_ms > 0) o["timeout"] = ms(job.timeout_ms);
  if (job.retry_base_ms != defaults.retry_base_ms || job.retry_cap_ms != defaults.retry_cap_ms)
    o["retry"] = json::object{{"base", ms(job.retry_base_ms)}, {"cap", ms(job.retry_cap_ms)}};
  if (auto sel = parsed_or_empty(job.selector_json); sel.is_object() && !sel.as_object().empty()) o["selector"] = sel;
  if (job.misfire_policy != defaults.misfire_policy) o["misfire_policy"] = job.misfire_policy;
  if (job.catch_up_limit != defaults.catch_up_limit) o["catch_up_limit"] = job.catch_up_limit;
  if (job.starting_deadline_ms) o["starting_deadline"] = ms(*job.starting_deadline_ms);
  if (job.max_instances) o["max_instances"] = *job.max_instances;
  if (job.concurrency_policy != defaults.concurrency_policy) o["concurrency_policy"] = job.concurrency_policy;
  if (job.exclusive_execution) o["exclusive_execution"] = true;
  if (job.mutually_exclusive) o["mutually_exclusive"] = true;
  if (job.self_destruct) o["self_destruct"] = true;
  if (job.concurrency_key) {
    json::object c{{"key", *job.concurrency_key}};
    if (job.concurrency_limit) c["limit"] = *job.concurrency_limit;
    o["concurrency"] = std::move(c);
  }
  if (job.rate_limit_runs && job.rate_limit_per_ms) {
    json::object r{{"runs", *job.rate_limit_runs}, {"per", ms(*job.rate_limit_per_ms)}};
    if (job.rate_limit_by_key) r["by_key"] = true;
    o["rate_limit"] = std::move(r);
  }
  if (job.on_error) o["on_error"] = *job.on_error;
  if (job.jitter_ms > 0) o["jitter"] = ms(job.jitter_ms);
  auto names = [&](const char* key, const std::vector<std::string>& v) {
    if (v.empty()) return;
    json::array a;
    for (const auto& s : v) a.emplace_back(s);
    o[key] = std::move(a);
  };
  names("on_events", job.on_events);
  names("run_after", job.run_after);
  // A parameter with no rule is its default alone; one with rules, the
  // rules and the default together.
  const json::value defaults_v = parsed_or_empty(job.parameters_json),
                    rules_v = parsed_or_empty(job.parameter_rules_json);
  if (defaults_v.is_object() && rules_v.is_object()) {
    json::object params;
    for (const auto& [name, rule] : rules_v.as_object()) {
      const auto* d = defaults_v.as_object().if_contains(name);
      if (rule.is_object() && rule.as_object().empty() && d) {
        params[name] = *d;
        continue;
      }
      json::object r = rule.is_object() ? rule.as_object() : json::object{};
      if (d) r["default"] = *d;
      params[name] = std::move(r);
    }
    for (const auto& [name, d] : defaults_v.as_object())
      if (!params.contains(name)) params[name] = d;
    if (!params.empty()) o["parameters"] = std::move(params);
  }
  json::array tasks;
  if (auto decoded = protocol::decode_tasks(job.tasks_json);
      auto* list = std::get_if<std::vector<protocol::Task>>(&decoded))
    for (const auto& t : *list) tasks.push_back(task_document(t));
  o["tasks"] = std::move(tasks);
  return o;
}

}  // namespace baton::admin
