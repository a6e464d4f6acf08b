#pragma once
// Internal to store/pg: the columns of a run the dispatcher may assign, read
// the same way wherever a DueRun is made (the dispatcher's due_runs, and a
// trigger's insert, which hands its new run straight to the dispatcher).
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "baton/store/leader_store.h"

namespace baton::store::pg {

/// The select list over a job_runs row `r` LEFT JOINed to its job_definitions
/// row `j` (due_run_width columns).
const std::string& due_run_columns();
inline constexpr int due_run_width = 28;
/// The column (from the first) of the database's clock as the row was made.
inline constexpr int due_run_clock_column = 17;

/// The DueRun in columns [first, first + due_run_width) of `row`; its
/// starts_in_ms counted from the database's clock as the row was made.
DueRun due_run_of(const pqxx::row& row, int first = 0);

/// A run's key (schemas/0035: baton_run_key over its parameters), SQL over
/// `r` and `j` as due_run_columns has them; NULL when its job has no key.
std::string run_key_sql(const std::string& r = "r", const std::string& j = "j");
/// The key its rate permits are counted under: its key when the job's
/// limit is per key, else ''.
std::string rate_key_sql(const std::string& r = "r", const std::string& j = "j");
/// True when run `r` of job `j` may be made active as far as its key's
/// limit and its rate permits go: a slot of its key and a permit free (or
/// no such limit). The due read keeps these runs; key_waiting_runs the others.
std::string keyed_room_sql();

/// baton_previous_attempt's 'fate|attempt|worker' (schemas/0041).
PreviousAttempt previous_attempt_of(const std::string& text);

/// Time left before `starts_at_us`, counted from `clock_us` (database
/// clock, microseconds), in whole milliseconds rounded up; 0 when due.
std::int64_t starts_in_ms(std::int64_t starts_at_us, std::int64_t clock_us);

/// Counts every run's time left from one clock: the latest at which any row
/// of `rows` (the DueRuns `runs` were read from) was made. Runs due at the
/// same time then have the same time left, so the leader holds their
/// starts until one moment and writes them in one batch; counted from each
/// row's own clock, a slot's runs fell on both sides of a millisecond and
/// were written in two batches, one after the other.
void settle_starts_in(std::vector<DueRun>& runs, const pqxx::result& rows, int first = 0);

}  // namespace baton::store::pg
