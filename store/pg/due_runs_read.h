// The dispatcher's read (PgLeaderStore::due_runs): the runs due for
// assignment, in dispatch order, without those no worker of a label set can
// take now. Its statement, prepared once per connection, and the settings it
// runs under; apart, so that a test can ask the planner what it does with
// them (store/tests/dispatch_read_plan_test.cpp).
#pragma once

#include <string>

namespace baton::store::pg {

/// `finished_at IS NULL`: the open index's predicate (schemas/0021).
extern const std::string unfinished;

/// When a run of the row alias `r` is due for assignment, `bound` its
/// look-ahead (SQL).
std::string due(const std::string& r, const std::string& bound);

/// "PREPARE due_runs(limit int, labels jsonb, ahead_ms bigint, taking jsonb) AS ...".
const std::string& due_runs_statement();

/// What each execution sets first, in its own implicit transaction: the
/// generic plan always, no sequential scan of the run table, and no JIT
/// (the penalty on the sequential scan of job_definitions that remains puts
/// the plan's cost past every JIT threshold: 1.1 s of compiling a call).
/// One statement for the three: each statement counts against the
/// statements-per-run budget (bench/budgets), and three SETs put the smoke
/// at 3.46 against 2.2.
inline constexpr const char* due_runs_settings =
    "SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true),"
    " set_config('jit', 'off', true)";

}  // namespace baton::store::pg
