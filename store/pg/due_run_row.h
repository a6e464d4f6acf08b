#pragma once
// Internal to store/pg: the columns of a run the dispatcher may assign, read
// the same way wherever a DueRun is made (the dispatcher's due_runs, and a
// trigger's insert, which hands its new run straight to the dispatcher).
#include <pqxx/pqxx>
#include <string>

#include "baton/store/leader_store.h"

namespace baton::store::pg {

/// The select list over a job_runs row `r` LEFT JOINed to its job_definitions
/// row `j` (due_run_width columns).
const std::string& due_run_columns();
inline constexpr int due_run_width = 17;

/// The DueRun in columns [first, first + due_run_width) of `row`.
DueRun due_run_of(const pqxx::row& row, int first = 0);

}  // namespace baton::store::pg
