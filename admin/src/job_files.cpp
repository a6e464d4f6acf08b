#include "baton/admin/job_files.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <filesystem>

#include "baton/base/config_yaml.h"
#include "baton/base/json_text.h"
#include "baton/base/shell_script.h"
#include "baton/leader_core/cron.h"
#include "baton/protocol/codec.h"
#include "baton/protocol/vocabulary.h"

namespace baton::admin {

namespace {

void read_parameters(const YAML::Node& params, store::JobDefinition& job, ConfigMap& j, ConfigErrors& errors);

// A concurrency key template (schemas/0035, baton_run_key): text with at
// least one {{param.NAME}}, and nothing else between double braces (which
// the database would keep as written: a key the same for every run, which
// is what max_instances is for).
std::optional<std::string> concurrency_key_problem(const std::string& key) {
  if (key.empty() || key.size() > 200) return "must be 1-200 characters";
  int params = 0;
  for (std::size_t at = key.find("{{"); at != std::string::npos; at = key.find("{{", at + 2)) {
    const auto close = key.find("}}", at + 2);
    if (close == std::string::npos) return "has a '{{' without its '}}'";
    std::string name = key.substr(at + 2, close - at - 2);
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    const bool ok =
        name.rfind("param.", 0) == 0 && name.size() > 6 && std::all_of(name.begin() + 6, name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        });
    if (!ok) return "'{{" + name.substr(0, 64) + "}}' is not {{param.NAME}}";
    ++params;
  }
  if (params == 0) return "must use a parameter, as in \"{{param.customer}}\" (one key for every run is max_instances)";
  return std::nullopt;
}

// A value substituted into a shell's script could run commands
// (docs/security.md, "Parameters and shells"): refused unless the task asks
// for shell_quote, which writes each {{param.NAME}} as its environment
// variable, quoted, into the script that is stored and run.
void quote_shell_script(protocol::Task& task, bool shell_quote, ConfigMap& t, ConfigErrors& errors) {
  const auto script = shell_script_index(task.command);
  const bool substitutes = script && task.command[*script].find("{{param.") != std::string::npos;
  if (!substitutes) {
    if (shell_quote)
      errors.add(t.key_path("shell_quote"),
                 "the command runs no shell script with {{param.NAME}} in it (sh -c SCRIPT): remove shell_quote");
    return;
  }
  const std::string where = t.key_path("command[" + std::to_string(*script) + "]");
  if (!shell_quote) {
    errors.add(where,
               "substitutes {{param.NAME}} into a shell script, where a value could run commands: refer to "
               "\"$BATON_PARAM_NAME\" in the script instead, or set shell_quote: true on the task to have "
               "each {{param.NAME}} written as its quoted variable");
    return;
  }
  auto quoted = quote_parameters_in_shell_script(task.command[*script]);
  if (auto* e = std::get_if<ShellScriptError>(&quoted)) return errors.add(where, e->message);
  task.command[*script] = std::get<std::string>(std::move(quoted));
}

/// The decimal number `text` starts with, and in `used` how many of its
/// characters it took (0: none).
double leading_number(const std::string& text, std::size_t& used) {
  used = 0;
  try {
    return std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
    return 0;
  }
}

/// `memory`: bytes, or a number with K, M, G or T (powers of 1024, "Ki"
/// and a trailing "B" accepted); `pids`: the most processes the tree may
/// hold; `cpu`: CPUs as a decimal ("0.5"), kept in thousandths.
protocol::TaskResources read_resources(ConfigMap r, ConfigErrors& errors) {
  protocol::TaskResources out;
  if (auto m = r.string("memory")) {
    std::size_t used = 0;
    const double number = leading_number(*m, used);
    std::string unit = m->substr(used);
    if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
    if (unit.size() == 2 && unit[1] == 'i') unit.pop_back();
    const std::string units = "KMGT";
    double scale = 1;
    if (unit.size() == 1 && units.find(static_cast<char>(std::toupper(unit[0]))) != std::string::npos)
      scale = static_cast<double>(std::int64_t{1} << (10 * (units.find(static_cast<char>(std::toupper(unit[0]))) + 1)));
    else if (!unit.empty())
      used = 0;
    const double bytes = number * scale;
    if (used == 0 || !(bytes >= 1 << 20) || bytes > static_cast<double>(std::int64_t{1} << 50))
      errors.add(r.key_path("memory"), "must be a size of at least 1M, like 512M or 2G, not '" + *m + "'");
    else
      out.memory_bytes = static_cast<std::int64_t>(bytes);
  }
  if (auto p = r.integer("pids", 1, 1 << 22)) out.pids = *p;
  if (auto c = r.string("cpu")) {
    std::size_t used = 0;
    const double cpus = leading_number(*c, used);
    if (used != c->size() || !(cpus >= 0.001) || cpus > 1024)
      errors.add(r.key_path("cpu"), "must be a number of CPUs between 0.001 and 1024, like 0.5, not '" + *c + "'");
    else
      out.cpu_millis = static_cast<std::int64_t>(cpus * 1000 + 0.5);
  }
  r.reject_unknown_keys();
  return out;
}

/// A role or parameter name: 1-63 letters, digits and underscores, not
/// starting with a digit (PostgreSQL's plain identifiers, psql's variables).
bool is_identifier(const std::string& name) {
  return !name.empty() && name.size() <= 63 && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::optional<protocol::Task> read_task(ConfigMap& t, ConfigErrors& errors) {
  protocol::Task task;
  auto kind = t.string("kind", true).value_or("");
  if (kind == "PROGRAM")
    task.kind = protocol::TaskKind::program;
  else if (kind == "SQL")
    task.kind = protocol::TaskKind::sql;
  else if (kind == "BUILTIN")
    task.kind = protocol::TaskKind::builtin;
  else if (!kind.empty())
    errors.add(t.key_path("kind"), "must be PROGRAM, SQL or BUILTIN, got '" + kind + "'");
  task.name = t.string("name").value_or("");
  if (auto c = t.string_list("command")) task.command = *c;
  const bool shell_quote = t.boolean("shell_quote").value_or(false);
  t.mark_known("env");
  task.cwd = t.string("cwd").value_or("");
  task.connection = t.string("connection").value_or("");
  task.sql = t.string("sql").value_or("");
  const std::string builtin = t.string("builtin").value_or("");
  task.argument = t.string("argument").value_or("");
  task.ignore_error = t.boolean("ignore_error").value_or(false);
  const std::string on_error = t.string("on_error").value_or(task.ignore_error ? "ignore" : "stop");
  if (on_error == "continue")
    task.on_error = protocol::TaskOnError::continue_;
  else if (on_error == "ignore")
    task.on_error = protocol::TaskOnError::ignore;
  else if (on_error != "stop")
    errors.add(t.key_path("on_error"), "must be stop, continue or ignore, got '" + on_error + "'");
  if (task.ignore_error && on_error != "ignore")
    errors.add(t.key_path("ignore_error"), "conflicts with on_error: use on_error alone");
  task.resources = read_resources(t.map("resources"), errors);
  if (!task.resources.empty() && task.kind != protocol::TaskKind::program)
    errors.add(t.key_path("resources"), "limits a PROGRAM task's processes only");
  // A task's own knobs (docs/scheduling.md, "Chains"): its timeout, its
  // parameter values (read by the caller, like env) and its SQL role.
  if (auto timeout = t.duration("timeout")) {
    if (timeout->count() < 1 || timeout->count() > (std::int64_t{1} << 40))
      errors.add(t.key_path("timeout"), "must be a duration of at least 1ms");
    else
      task.timeout_ms = timeout->count();
  }
  t.mark_known("parameters");
  task.run_as = t.string("run_as").value_or("");
  if (!task.run_as.empty()) {
    if (task.kind != protocol::TaskKind::sql)
      errors.add(t.key_path("run_as"), "applies to a SQL task only (SET ROLE)");
    else if (!is_identifier(task.run_as))
      errors.add(t.key_path("run_as"),
                 "must be a role name of 1-63 letters, digits and underscores, not starting with a digit, got '" +
                     task.run_as.substr(0, 64) + "'");
  }
  t.reject_unknown_keys();
  if (task.kind == protocol::TaskKind::program && task.command.empty())
    errors.add(t.key_path("command"), "a PROGRAM task needs a command (a list: program and arguments)");
  if (task.kind == protocol::TaskKind::program)
    quote_shell_script(task, shell_quote, t, errors);
  else if (shell_quote)
    errors.add(t.key_path("shell_quote"), "applies to a PROGRAM task's shell script only");
  if (task.kind == protocol::TaskKind::sql && (task.connection.empty() || task.sql.empty()))
    errors.add(t.key_path("sql"), "an SQL task needs both connection and sql");
  if (task.kind == protocol::TaskKind::builtin) {
    if (auto b = protocol::parse_builtin(builtin))
      task.builtin = *b;
    else
      errors.add(t.key_path("builtin"), "must be NOOP, SLEEP, LOG or FAIL, got '" + builtin + "'");
  }
  return task;
}

/// A task's own parameter values (`parameters:` of a task): names as the
/// job's, values text (a number or boolean as written).
void read_task_parameters(const YAML::Node& params, const std::string& path, protocol::Task& task,
                          ConfigErrors& errors) {
  if (!params.IsMap()) {
    errors.add(path, "must be a mapping of parameter names to values");
    return;
  }
  for (const auto& kv : params) {
    const std::string name = kv.first.as<std::string>();
    if (!is_identifier(name)) {
      errors.add(path + "." + name.substr(0, 64),
                 "a parameter name is 1-63 letters, digits and underscores, not starting with a digit");
      continue;
    }
    if (!kv.second.IsScalar()) {
      errors.add(path + "." + name, "must be a value (text, a number or a boolean)");
      continue;
    }
    task.parameters[name] = kv.second.as<std::string>();
  }
}

/// One job definition from its YAML (or JSON) mapping; problems are added
/// to `errors` under `path`.
store::JobDefinition read_job(const YAML::Node& node, const std::string& path, ConfigErrors& errors) {
  ConfigMap j(node, path, errors);
  store::JobDefinition job;
  job.name = j.string("name", true).value_or("");
  if (auto s = j.string("schedule")) {
    auto parsed = leader_core::parse_cron(*s);
    if (auto* e = std::get_if<leader_core::CronParseError>(&parsed))
      errors.add(j.key_path("schedule"), "'" + *s + "' at position " + std::to_string(e->position) + ": " + e->message);
    job.schedule = *s;
  }
  if (auto z = j.string("time_zone")) {
    if (auto e = leader_core::validate_time_zone(*z)) errors.add(j.key_path("time_zone"), *e);
    job.time_zone = *z;
  }
  job.max_attempts = static_cast<int>(j.integer("max_attempts", 1, 100).value_or(1));
  job.priority = static_cast<int>(j.integer("priority", -1000, 1000).value_or(0));
  if (auto t = j.duration("timeout")) job.timeout_ms = t->count();
  ConfigMap retry = j.map("retry");
  if (auto b = retry.duration("base")) job.retry_base_ms = b->count();
  if (auto c = retry.duration("cap")) job.retry_cap_ms = c->count();
  retry.reject_unknown_keys();
  job.live = j.boolean("live").value_or(true);
  job.misfire_policy = j.string("misfire_policy").value_or("run_latest");
  if (job.misfire_policy != "run_all" && job.misfire_policy != "run_latest" && job.misfire_policy != "skip")
    errors.add(j.key_path("misfire_policy"), "must be run_all, run_latest or skip");
  job.catch_up_limit = static_cast<int>(j.integer("catch_up_limit", 0, 10000).value_or(100));
  if (auto m = j.integer("max_instances", 1, 10000)) job.max_instances = static_cast<int>(*m);
  job.concurrency_policy = j.string("concurrency_policy").value_or("allow");
  if (job.concurrency_policy != "allow" && job.concurrency_policy != "forbid" && job.concurrency_policy != "replace")
    errors.add(j.key_path("concurrency_policy"), "must be allow, forbid or replace");
  // exclusive_execution: nothing else runs while it runs (pg_timetable's);
  // mutually_exclusive: no two mutually exclusive runs at once.
  job.exclusive_execution = j.boolean("exclusive_execution").value_or(false);
  job.mutually_exclusive = j.boolean("mutually_exclusive").value_or(false);
  job.self_destruct = j.boolean("self_destruct").value_or(false);
  // Keyed concurrency and rate limits (schemas/0035; docs/scheduling.md,
  // "Concurrency keys and rate limits").
  ConfigMap concurrency = j.map("concurrency");
  if (auto key = concurrency.string("key")) {
    if (auto problem = concurrency_key_problem(*key))
      errors.add(concurrency.key_path("key"), *problem);
    else
      job.concurrency_key = *key;
  }
  if (auto limit = concurrency.integer("limit", 1, 10000)) job.concurrency_limit = static_cast<int>(*limit);
  concurrency.reject_unknown_keys();
  if (job.concurrency_limit && !job.concurrency_key)
    errors.add(concurrency.key_path("limit"), "is a limit per key: give concurrency.key too");
  ConfigMap rate = j.map("rate_limit");
  if (auto runs = rate.integer("runs", 1, 10000)) job.rate_limit_runs = static_cast<int>(*runs);
  if (auto per = rate.duration("per")) {
    if (per->count() < 1 || per->count() > 7LL * 24 * 3600 * 1000)
      errors.add(rate.key_path("per"), "must be from 1ms to 168h");
    else
      job.rate_limit_per_ms = per->count();
  }
  job.rate_limit_by_key = rate.boolean("by_key").value_or(false);
  rate.reject_unknown_keys();
  if (job.rate_limit_runs.has_value() != job.rate_limit_per_ms.has_value())
    errors.add(j.key_path("rate_limit"), "needs both runs and per (for example runs: 10, per: 1m)");
  if (job.rate_limit_by_key && !job.concurrency_key)
    errors.add(rate.key_path("by_key"), "counts runs per key: give concurrency.key too");
  if (job.rate_limit_by_key && !job.rate_limit_runs) job.rate_limit_by_key = false;
  // The job's own on_error: a job run once when a run of this one fails for
  // good (docs/scheduling.md, "When a run fails for good").
  if (auto handler = j.string("on_error")) {
    if (handler->empty() || handler->size() > 200)
      errors.add(j.key_path("on_error"), "names a job (1-200 characters) run when a run of this one fails for good");
    else
      job.on_error = *handler;
  }
  // Events a job subscribes to, and jobs whose successes it runs after.
  auto names = [&](const char* key, std::vector<std::string>& out) {
    if (auto list = j.string_list(key)) {
      for (const auto& v : *list) {
        if (v.empty() || v.size() > 200)
          errors.add(j.key_path(key), "each entry must be 1-200 characters, got '" + v.substr(0, 64) + "'");
        else
          out.push_back(v);
      }
    }
  };
  names("on_events", job.on_events);
  names("run_after", job.run_after);
  for (const auto& upstream : job.run_after)
    if (upstream == job.name) errors.add(j.key_path("run_after"), "a job cannot run after itself");
  if (auto d = j.duration("jitter")) {
    if (d->count() < 0 || d->count() > 3600000)
      errors.add(j.key_path("jitter"), "must be from 0s to 1h");
    else
      job.jitter_ms = d->count();
  }
  if (auto d = j.duration("starting_deadline")) {
    if (d->count() < 1000)
      errors.add(j.key_path("starting_deadline"), "must be at least 1s");
    else
      job.starting_deadline_ms = d->count();
  }
  YAML::Node sel = node["selector"];
  std::string selector = "{";
  if (sel && sel.IsMap()) {
    for (const auto& kv : sel) {
      if (selector.size() > 1) selector += ',';
      selector += json_quote(kv.first.as<std::string>()) + ":" + json_quote(kv.second.as<std::string>());
    }
  } else if (sel && !sel.IsNull()) {
    errors.add(j.key_path("selector"), "must be a mapping of label to value");
  }
  j.mark_known("selector");
  // The parameters a trigger may set, each with its default (a trigger's
  // parameters are laid over the defaults) or its rules.
  read_parameters(node["parameters"], job, j, errors);
  j.mark_known("parameters");
  job.selector_json = selector + "}";
  // The job's resources apply to each of its PROGRAM tasks that names none.
  const protocol::TaskResources job_resources = read_resources(j.map("resources"), errors);
  std::vector<protocol::Task> tasks;
  YAML::Node tl = node["tasks"];
  j.mark_known("tasks");
  if (!tl || !tl.IsSequence() || tl.size() == 0) {
    errors.add(j.key_path("tasks"), "must be a non-empty list of tasks");
  } else {
    for (std::size_t k = 0; k < tl.size(); ++k) {
      ConfigMap t(tl[k], j.key_path("tasks[" + std::to_string(k) + "]"), errors);
      YAML::Node env = tl[k]["env"];
      YAML::Node params = tl[k]["parameters"];
      auto task = read_task(t, errors);
      if (task && env && env.IsMap())
        for (const auto& kv : env) task->env[kv.first.as<std::string>()] = kv.second.as<std::string>();
      if (task && params) read_task_parameters(params, t.key_path("parameters"), *task, errors);
      if (task && task->kind == protocol::TaskKind::program && task->resources.empty()) task->resources = job_resources;
      if (task) tasks.push_back(*task);
    }
  }
  job.tasks_json = protocol::encode_tasks(tasks);
  j.reject_unknown_keys();
  return job;
}

// One declared parameter: a text value is its default (any text may
// replace it), a mapping its rules (schemas/0027): type, pattern, enum,
// required, operate, default.
void read_parameter(const std::string& name, const YAML::Node& value, const store::JobDefinition& job,
                    boost::json::object& defaults, boost::json::object& rules, ConfigMap& j, ConfigErrors& errors) {
  const std::string path = j.key_path("parameters." + name);
  boost::json::object rule;
  if (value.IsScalar()) {
    defaults[name] = value.as<std::string>();
    rules[name] = std::move(rule);
    return;
  }
  if (!value.IsMap()) {
    errors.add(path,
               "must be a default value (text) or a mapping of rules (type, pattern, enum, required, operate, "
               "default)");
    return;
  }
  ConfigMap p(value, path, errors);
  std::string type = "string";
  if (auto t = p.string("type")) {
    if (*t != "string" && *t != "integer" && *t != "number" && *t != "boolean")
      errors.add(p.key_path("type"), "must be string, integer, number or boolean, got '" + *t + "'");
    else
      type = *t;
    rule["type"] = type;
  }
  auto a_type = [&] { return (type == "integer" ? "an " : "a ") + type; };
  auto fits_type = [&](const std::string& v) {
    auto digits = [](std::string_view s) {
      return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
    };
    std::string_view s = v;
    if (type == "boolean") return v == "true" || v == "false";
    if (!s.empty() && s.front() == '-') s.remove_prefix(1);
    if (type == "integer") return digits(s) && s.size() <= 18;
    if (type == "number") {
      const auto e = s.find_first_of("eE");
      const auto mantissa = s.substr(0, e);
      const auto dot = mantissa.find('.');
      if (!digits(mantissa.substr(0, dot)) || (dot != std::string_view::npos && !digits(mantissa.substr(dot + 1))))
        return false;
      if (e == std::string_view::npos) return true;
      auto exp = s.substr(e + 1);
      if (!exp.empty() && (exp.front() == '-' || exp.front() == '+')) exp.remove_prefix(1);
      return digits(exp);
    }
    return true;
  };
  if (auto pattern = p.string("pattern")) {
    if (pattern->empty() || pattern->size() > 1024)
      errors.add(p.key_path("pattern"), "must be a regular expression of 1-1024 characters");
    rule["pattern"] = *pattern;
  }
  YAML::Node en = value["enum"];
  p.mark_known("enum");
  std::vector<std::string> allowed;
  if (en) {
    if (!en.IsSequence() || en.size() == 0) {
      errors.add(p.key_path("enum"), "must be a non-empty list of values");
    } else {
      boost::json::array values;
      for (std::size_t i = 0; i < en.size(); ++i) {
        if (!en[i].IsScalar()) {
          errors.add(p.key_path("enum[" + std::to_string(i) + "]"), "must be a text value");
          continue;
        }
        allowed.push_back(en[i].as<std::string>());
        if (!fits_type(allowed.back()))
          errors.add(p.key_path("enum[" + std::to_string(i) + "]"),
                     "is not " + a_type() + ": '" + allowed.back() + "'");
        values.emplace_back(allowed.back());
      }
      rule["enum"] = std::move(values);
    }
  }
  const bool required = p.boolean("required").value_or(false);
  if (required) rule["required"] = true;
  if (auto operate = p.boolean("operate"); operate && !*operate) rule["operate"] = false;
  YAML::Node def = value["default"];
  p.mark_known("default");
  if (def) {
    if (!def.IsScalar()) {
      errors.add(p.key_path("default"), "must be a text value (a string, number or boolean)");
    } else {
      const std::string d = def.as<std::string>();
      if (required) errors.add(p.key_path("default"), "a required parameter has no default: a trigger must set it");
      if (!fits_type(d)) errors.add(p.key_path("default"), "is not " + a_type() + ": '" + d + "'");
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), d) == allowed.end())
        errors.add(p.key_path("default"), "is not one of the enum's values: '" + d + "'");
      defaults[name] = d;
    }
  }
  // Runs of a schedule, an event or an upstream job have no trigger to set it.
  if (required && (job.schedule || !job.on_events.empty() || !job.run_after.empty()))
    errors.add(p.key_path("required"),
               "a job that runs on a schedule, on events or after other jobs cannot require a parameter (those runs "
               "have no trigger to set it): give it a default instead");
  p.reject_unknown_keys();
  rules[name] = std::move(rule);
}

void read_parameters(const YAML::Node& params, store::JobDefinition& job, ConfigMap& j, ConfigErrors& errors) {
  boost::json::object defaults, rules;
  if (params && params.IsMap()) {
    for (const auto& kv : params)
      read_parameter(kv.first.as<std::string>(), kv.second, job, defaults, rules, j, errors);
  } else if (params && !params.IsNull()) {
    errors.add(j.key_path("parameters"), "must be a mapping of names to default values or rules");
  }
  job.parameters_json = boost::json::serialize(defaults);
  job.parameter_rules_json = boost::json::serialize(rules);
  if (job.parameters_json.size() + job.parameter_rules_json.size() > 65536)
    errors.add(j.key_path("parameters"), "is larger than 64 KiB");
}

}  // namespace

Result<store::JobDefinition> parse_job_document(const std::string& text, const std::string& source,
                                                const std::string& name) {
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return make_error(Errc::bad_input, source + ": a job definition is an object of its keys");
    if (!name.empty() && !root["name"]) root["name"] = name;
    ConfigErrors errors(source);
    auto job = read_job(root, "", errors);
    if (!errors.empty()) return make_error(Errc::bad_input, errors.joined());
    if (!name.empty() && job.name != name)
      return make_error(Errc::bad_input,
                        source + ": name: '" + job.name + "' differs from the job named in the URL '" + name + "'");
    return job;
  } catch (const YAML::Exception& e) {
    // A value of the wrong shape where a string was expected (a selector
    // label given as an object, say) ends up here.
    return make_error(Errc::bad_input, source + ": not a valid job definition: " + e.what());
  }
}

std::vector<std::string> job_changes(const store::JobDefinition& from, const store::JobDefinition& to) {
  auto same_json = [](const std::string& a, const std::string& b) {
    boost::system::error_code ea, eb;
    auto va = boost::json::parse(a, ea);
    auto vb = boost::json::parse(b, eb);
    return ea || eb ? a == b : va == vb;  // objects compare regardless of key order
  };
  std::vector<std::string> out;
  if (from.schedule != to.schedule) out.push_back("schedule");
  if (from.time_zone != to.time_zone) out.push_back("time_zone");
  if (!same_json(from.tasks_json, to.tasks_json)) out.push_back("tasks");
  if (from.max_attempts != to.max_attempts) out.push_back("max_attempts");
  if (from.priority != to.priority) out.push_back("priority");
  if (from.timeout_ms != to.timeout_ms) out.push_back("timeout");
  if (from.retry_base_ms != to.retry_base_ms) out.push_back("retry.base");
  if (from.retry_cap_ms != to.retry_cap_ms) out.push_back("retry.cap");
  if (!same_json(from.selector_json, to.selector_json)) out.push_back("selector");
  if (from.live != to.live) out.push_back("live");
  if (from.misfire_policy != to.misfire_policy) out.push_back("misfire_policy");
  if (from.catch_up_limit != to.catch_up_limit) out.push_back("catch_up_limit");
  if (from.starting_deadline_ms != to.starting_deadline_ms) out.push_back("starting_deadline");
  if (from.max_instances != to.max_instances) out.push_back("max_instances");
  if (from.concurrency_policy != to.concurrency_policy) out.push_back("concurrency_policy");
  if (from.exclusive_execution != to.exclusive_execution) out.push_back("exclusive_execution");
  if (from.mutually_exclusive != to.mutually_exclusive) out.push_back("mutually_exclusive");
  if (from.on_error != to.on_error) out.push_back("on_error");
  if (from.concurrency_key != to.concurrency_key || from.concurrency_limit != to.concurrency_limit)
    out.push_back("concurrency");
  if (from.rate_limit_runs != to.rate_limit_runs || from.rate_limit_per_ms != to.rate_limit_per_ms ||
      from.rate_limit_by_key != to.rate_limit_by_key)
    out.push_back("rate_limit");
  if (from.jitter_ms != to.jitter_ms) out.push_back("jitter");
  if (from.on_events != to.on_events) out.push_back("on_events");
  if (from.run_after != to.run_after) out.push_back("run_after");
  if (!same_json(from.parameters_json, to.parameters_json) ||
      !same_json(from.parameter_rules_json, to.parameter_rules_json))
    out.push_back("parameters");
  if (from.self_destruct != to.self_destruct) out.push_back("self_destruct");
  return out;
}

}  // namespace baton::admin
