#pragma once
// An SQL task, run through libpq inside the worker (docs/scheduling.md,
// "Tasks"). Not psql: psql takes the connection string on its command line
// (a password visible to every `ps`) and has a shell escape (`\!`), so an
// SQL task could run any program. Here the connection string stays in this
// process's memory and the only thing that reaches the server is SQL.
//
// The text is sent as one simple query: several statements run in order in
// one implicit transaction (all or nothing, unless the text has its own
// BEGIN/COMMIT), the first error stops it. Rows of each result are printed
// to stdout as `a|b` lines under a header, with "(N rows)"; notices and the
// error go to stderr. A cancel or the run's timeout sends the server a
// cancel request; a server that does not answer it within 5 s loses the
// connection.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace baton::worker {

struct SqlTaskOutcome {
  bool ok = false;
  int exit_code = 0;  ///< 0 ok, 2 no connection, 3 the SQL failed (as psql's ON_ERROR_STOP)
  bool timed_out = false;
  bool canceled = false;
  std::string error;
};

/// `settings`: session settings made before the task's SQL runs (name ->
/// value, e.g. baton.run_id, or `role` for a task's run_as; set_config, so
/// a value is never SQL text, and the task's SQL is sent alone).
SqlTaskOutcome run_sql_task(const std::string& url, const std::string& sql, const std::string& application_name,
                            std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& cancel,
                            const std::function<void(int stream, const std::string& text)>& output,
                            const std::map<std::string, std::string>& settings = {});

}  // namespace baton::worker
