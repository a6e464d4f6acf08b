#pragma once
// Internal to store/pg: the columns of a run the dispatcher may assign, read
// the same way wherever a DueRun is made (the dispatcher's due_runs, and a
// trigger's insert, which hands its new run straight to the dispatcher).
//
// A run's own columns and its job's are read apart: the dispatcher's read
// takes the run's own columns and its job's row version only, and the job's
// columns once per version of the job (DueJobCache), where each row used to
// carry its job's tasks, selector and parameters as text to be parsed again
// (docs/performance.md, "The job's columns once per version").
#include <cstdint>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <unordered_map>
#include <vector>

#include "baton/store/leader_store.h"

namespace baton::store::pg {

/// What a run's job contributes to its DueRun: the columns of a
/// job_definitions row, or the defaults when the run has no job.
struct DueJob {
  std::string name;
  std::string tasks_json = "[]";
  std::int64_t timeout_ms = 0;
  std::map<std::string, std::string> selector;
  std::int64_t retry_base_ms = 1000;
  std::int64_t retry_cap_ms = 3600000;
  std::optional<int> instance_limit{};
  bool exclusive = false;
  std::map<std::string, std::string> parameters;  ///< the job's defaults, each value as text
};

/// The select list of a job over a job_definitions row `j`, which may be
/// NULL (a LEFT JOIN that found no job): due_job_width columns.
const std::string& due_job_columns();
inline constexpr int due_job_width = 9;
DueJob due_job_of(const pqxx::row& row, int first);

/// The select list of a run's own columns over a job_runs row `r`
/// (due_run_own_width columns), the last the database's clock as the row
/// was made.
const std::string& due_run_own_columns();
inline constexpr int due_run_own_width = 10;
inline constexpr int due_run_clock_column = due_run_own_width - 1;

/// The run's own columns, then its job's (`r` LEFT JOINed to `j`):
/// due_run_width columns.
const std::string& due_run_columns();
inline constexpr int due_run_width = due_run_own_width + due_job_width;

/// The DueRun in columns [first, first + due_run_own_width) of `row` with
/// the facts of its job; its starts_in_ms counted from the database's clock
/// as the row was made.
DueRun due_run_of(const pqxx::row& row, int first, const DueJob& job);
/// The same from due_run_columns(): the job's columns follow the run's.
DueRun due_run_of(const pqxx::row& row, int first = 0);

/// The job's parameters overlaid by a run's payload as the database's jsonb
/// `||` overlays them: the payload's "parameters", then its other top-level
/// keys. A payload that is not an object, or whose "parameters" is not one,
/// leaves none (the concatenation is then an array, not an object).
void overlay_payload(std::map<std::string, std::string>& parameters, const std::string& payload_json);

/// The jobs the dispatcher has read, by id, each at the row version it was
/// read at (job_definitions.xmin: every update of the row changes it, so no
/// writer of the table has to remember to bump a counter).
class DueJobCache {
 public:
  /// The job at that row version, or nullptr when it is not held.
  const DueJob* find(std::int64_t job_id, std::int64_t row_version) const;
  void put(std::int64_t job_id, std::int64_t row_version, DueJob job);

 private:
  struct Entry {
    std::int64_t row_version = 0;
    DueJob job;
  };
  std::unordered_map<std::int64_t, Entry> jobs_;
};

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
