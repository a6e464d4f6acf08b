#pragma once
// A private PostgreSQL for one test executable (scripts/pg-private), started
// on first use and removed at exit, plus read-only inspection helpers so test
// code outside store/ never writes SQL of its own.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace baton::testing {

class PgInstance {
 public:
  /// The executable's cluster; starts it on first call (never skips: a
  /// missing PostgreSQL is a failed test, not a skipped one).
  static PgInstance& shared();
  ~PgInstance();

  /// A new empty database; `migrated` copies a template that already has
  /// every migration applied.
  std::string fresh_database(const std::string& prefix, bool migrated = true);
  /// A new database owned by a role of its own that is no superuser and
  /// holds no other right (docs/operations.md, "A least-privilege database
  /// role"), migrated as that role up to schema version `up_to` (every
  /// one by default): the URL connects as it. Throws if a migration needs
  /// more than the role has.
  std::string least_privilege_database(const std::string& prefix, int up_to = std::numeric_limits<int>::max());
  /// A database set up as docs/operations.md, "A runtime role apart from
  /// the owner", has it: an owner role migrates it (as above) and a role
  /// with LOGIN and nothing else is granted row rights by
  /// store::pg::grant_runtime_role.
  struct SeparateRoles {
    std::string owner_url, runtime_url, runtime_role;
    std::string ungranted_url;  ///< the same database as a login role never granted anything
  };
  SeparateRoles separate_roles_database(const std::string& prefix, int up_to = std::numeric_limits<int>::max());
  /// The same database as `url` (one of fresh_database's, migrated),
  /// reached as `baton_runtime`: a role with row rights only over every
  /// table (granted on the template), which the test clusters' nodes use.
  std::string runtime_url(const std::string& url) const;
  std::string url(const std::string& database) const;
  const std::string& dir() const { return dir_; }

 private:
  PgInstance();
  std::string dir_;
  int port_ = 0;
  int next_db_ = 0;
  bool template_ready_ = false;
};

struct EpochRow {
  std::int64_t epoch;
  std::string leader_id;
  std::string leader_incarnation;
  std::optional<std::string> end_reason;
};

struct LeaseRow {
  std::int64_t epoch;
  std::string leader_id;
  std::string leader_incarnation;
  bool released;
};

struct RunRowView {
  std::int64_t id = 0;
  std::string state;
  int attempt = 0;
  std::string worker_id;
  std::string continuation_state;
  std::int64_t leader_epoch = 0;
  std::string job;
  std::string lease_token;
  double scheduled_for_unix = 0;  ///< 0: none
  double started_at_unix = 0;     ///< 0: not started
};

struct AttemptRowView {
  int attempt = 0;
  std::string worker_id;
  std::string outcome;
  std::optional<int> exit_code;
  std::int64_t leader_epoch = 0;
  double started_at_unix = 0;
};

/// Removes a finished run with its log, attempts, history and ledger
/// entries, as retention pruning does, without waiting retention_days: test
/// scaffolding for "what is left once a run was pruned".
void erase_run_as_pruned(const std::string& url, std::int64_t run_id);
/// Moves a finished run's finish `days` into the past (test scaffolding for
/// retention, which prunes by that time).
void age_finished_run(const std::string& url, std::int64_t run_id, int days);

/// Holds `ACCESS EXCLUSIVE` on one table, in a transaction of its own, until
/// destroyed: a test stops whatever reads or writes that table (the history
/// checker's sweep, over `verify_cursor`) at a known point instead of racing
/// it, and lets it go on by dropping the lock.
class TableLock {
 public:
  TableLock(const std::string& url, const std::string& table);
  ~TableLock();
  TableLock(const TableLock&) = delete;
  TableLock& operator=(const TableLock&) = delete;

 private:
  struct Held;
  std::unique_ptr<Held> held_;
};

/// Assigns the PENDING run `run` to `worker` (attempt 1, this epoch) with
/// raw SQL, past the leader and its book, recording the write in the run's
/// history as the write guard demands: a run the leader's copy does not
/// hold, for the tests of the history checker's repair. Throws when the
/// run is not PENDING.
void assign_run_by_hand(const std::string& url, std::int64_t run, const std::string& worker);

/// Read-only views of a Baton database for assertions.
class DbInspector {
 public:
  explicit DbInspector(std::string url) : url_(std::move(url)) {}
  std::optional<RunRowView> run(std::int64_t id) const;
  std::vector<RunRowView> runs_of_job(const std::string& job) const;
  std::vector<AttemptRowView> attempts(std::int64_t run_id) const;
  std::int64_t dead_letters(std::int64_t run_id) const;
  std::string run_logs(std::int64_t run_id) const;
  /// Transitions of a run as "FROM->TO@epoch" strings, oldest first.
  std::vector<std::string> transitions(std::int64_t run_id) const;
  /// Committed run writes whose epoch had already been superseded by an
  /// election that committed before them (commit timestamps).
  std::int64_t stale_epoch_writes() const;
  LeaseRow lease() const;
  std::vector<EpochRow> epoch_history() const;
  std::vector<int> applied_migrations() const;  ///< one entry per schema_migrations row
  std::int64_t count_rows(const std::string& table) const;
  /// The first column of the first row of `sql` as text ("" for none or
  /// NULL): for a test to look at, or to move a stored time (an expiry) into
  /// the past instead of waiting for it.
  std::string scalar(const std::string& sql) const;
  /// Server pids of backends whose application_name starts with `prefix`.
  std::vector<int> backend_pids(const std::string& application_name_prefix) const;

 private:
  std::string url_;
};

}  // namespace baton::testing
