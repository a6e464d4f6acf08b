#pragma once
// Internal to ctl: what the verb families share (verb_table.cpp defines
// it), and the families, each in a file of its own (verbs_*.cpp); verbs()
// puts them together in the order `--help` lists them.
#include <boost/json.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ctl_verbs.h"
#include "render.h"

namespace baton::ctl::kit {

/// --limit, --cursor, --all.
extern const std::vector<Flag> list_flags;
/// `f` and the list flags.
std::vector<Flag> with_list(std::vector<Flag> f);
/// GET a list, page by page when --all; prints a table or, with -o json,
/// {"items": [...], "next_cursor": ...}.
int list(Call& c, const std::string& path, std::vector<std::pair<std::string, std::string>> query,
         const std::vector<Column>& columns);
/// A call whose answer is printed as-is (-o json) or as key: value lines.
int simple(Call& c, const std::string& method, const std::string& path, const std::string& body = "");
/// A 201 answer holding a secret (`token`): the secret alone on stdout (for
/// a file or a pipe; -o json: the whole answer), `said(answer)` on stderr
/// (what it grants, that it is not shown again); else the API's error.
int print_secret(Call& c, const ApiReply& reply, const std::function<std::string(const boost::json::object&)>& said);
/// A bootstrap token's answer (print_secret, with the grant said).
int print_bootstrap(Call& c, const ApiReply& reply);
/// A run state no run leaves.
bool terminal(const std::string& state);
/// --ttl as the body's ttl_seconds; false when it is not a duration.
bool put_ttl(Call& c, boost::json::object& body);
/// `logs`: a run's output, live or from the node's log archive.
int logs(Call& c);
/// `runs watch`.
int watch(Call& c);

std::vector<Verb> run_verbs();          ///< status, runs, logs (verbs_runs.cpp)
std::vector<Verb> job_verbs();          ///< jobs, apply (verbs_jobs.cpp)
std::vector<Verb> worker_verbs();       ///< workers (verbs_fleet.cpp)
std::vector<Verb> dead_letter_verbs();  ///< dead-letters, why (verbs_runs.cpp)
std::vector<Verb> cluster_verbs();      ///< nodes, epochs, leader, incident (verbs_fleet.cpp)
std::vector<Verb> event_verbs();        ///< events (verbs_runs.cpp)
std::vector<Verb> admin_verbs();        ///< audit ... completion (verbs_admin.cpp)

}  // namespace baton::ctl::kit
