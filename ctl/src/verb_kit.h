#pragma once
// Internal to ctl: what the verb families share (verb_table.cpp defines
// it), and the families, each in a file of its own (verbs_*.cpp); verbs()
// puts them together in the order `--help` lists them.
#include <boost/json.hpp>
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
/// A bootstrap token's answer: the token alone on stdout, what it grants on
/// stderr.
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
