#pragma once
// A private PostgreSQL for one test executable (scripts/pg-private), started
// on first use and removed at exit, plus read-only inspection helpers so test
// code outside store/ never writes SQL of its own.
#include <cstdint>
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

/// Read-only views of a Baton database for assertions.
class DbInspector {
 public:
  explicit DbInspector(std::string url) : url_(std::move(url)) {}
  LeaseRow lease() const;
  std::vector<EpochRow> epoch_history() const;
  std::vector<int> applied_migrations() const;  ///< one entry per schema_migrations row
  std::int64_t count_rows(const std::string& table) const;
  /// Server pids of backends whose application_name starts with `prefix`.
  std::vector<int> backend_pids(const std::string& application_name_prefix) const;

 private:
  std::string url_;
};

}  // namespace baton::testing
