#pragma once
// Internal to ctl: one invocation of a verb, and the verbs that live in
// files of their own.
#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baton/ctl/api_client.h"

namespace baton::ctl {

struct Call {
  Call(ApiClient a, std::ostream& o, std::ostream& e) : api(std::move(a)), out(o), err(e) {}
  ApiClient api;
  std::ostream& out;
  std::ostream& err;
  std::string verb;                          ///< "runs list"
  std::vector<std::string> args;             ///< positional arguments
  std::map<std::string, std::string> flags;  ///< "--job" -> value ("true" for switches; repeated: joined by \n)
  std::string output = "table";
  /// The config file in use (it may not exist), its contexts and the one
  /// chosen ("" none): the `config` verbs read and change them.
  std::string config_path;
  std::vector<std::string> contexts;
  std::string context;
  /// `out` is a terminal: what a task printed is made harmless to it
  /// (terminal_safe) before it is shown.
  bool terminal = false;

  /// A machine format: verbs print JSON (jsonl and yaml are made from it).
  bool json_output() const { return output == "json" || output == "jsonl" || output == "yaml"; }
  bool has(const std::string& name) const { return flags.count(name) > 0; }
  std::optional<std::string> flag(const std::string& name) const;
  /// Prints the API's error and returns its exit code (ctl.h).
  int fail(const ApiReply& r);
  int error(int code, const std::string& message);
  int usage(const std::string& message);
};

/// The address a ctl without --addr, BATON_ADDR or a config file talks to.
inline constexpr const char* default_addr = "127.0.0.1:7001";

struct Flag {
  std::string name;  ///< "--job"
  bool value;        ///< takes a value
  std::string help;
};

struct Verb {
  std::vector<std::string> words;  ///< {"runs", "list"}
  std::string args;                ///< positional arguments, for the usage line
  std::string help;
  std::vector<Flag> flags;
  int min_args = 0, max_args = 0;  ///< -1: any number
  std::function<int(Call&)> run;
};

/// Every verb, in the order `--help` lists them (verb_table.cpp).
std::vector<Verb> verbs();
/// Words joined by single spaces ("runs list").
std::string joined(const std::vector<std::string>& words);
/// The usage and the verbs, one line each (help.cpp).
int print_help(std::ostream& out, const std::vector<Verb>& all);
/// A completion script for `verbs` in `shell`: bash, zsh or fish (help.cpp).
std::string completion_script(const std::vector<Verb>& verbs, const std::string& shell);
/// "500ms", "10s", "5m", "1h" (a bare number: seconds); nothing when not one.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& s);

int runs_list(Call& c);
int incident_export(Call& c);
/// The run filters of `runs list` (--job, --state, --worker, --key,
/// --error, --since, --until) as query parameters; a usage error's code.
std::optional<int> run_filters(Call& c, std::vector<std::pair<std::string, std::string>>& q);
/// `runs cancel|rerun` without RUN: every run the filters match (bulk.cpp).
int runs_bulk(Call& c, const std::string& verb);
/// `baton ctl jobs export [JOB...]` (export.cpp).
int jobs_export(Call& c);
/// `baton ctl config get-contexts | current-context | use-context NAME`
/// (contexts.cpp).
int config_get_contexts(Call& c);
int config_current_context(Call& c);
int config_use_context(Call& c);
/// A --since/--until value as unix seconds: unix seconds, a duration back
/// from `now_unix` (90s, 15m, 2h, 7d), or an RFC 3339 time with its zone.
std::optional<std::int64_t> time_filter(const std::string& v, std::int64_t now_unix);
/// `baton ctl apply -f PATH [--prune] [--dry-run]` (apply.cpp).
int apply(Call& c);

}  // namespace baton::ctl
