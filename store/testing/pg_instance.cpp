#include "baton/store_testing/pg_instance.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <pqxx/pqxx>
#include <stdexcept>

#include "baton/store_pg/migrate.h"

namespace baton::testing {

namespace {

std::string run_command(const std::string& cmd) {
  std::array<char, 512> buf{};
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
  if (!pipe) throw std::runtime_error("popen failed: " + cmd);
  while (std::fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  int status = ::pclose(pipe.release());
  if (status != 0) throw std::runtime_error("command failed (" + std::to_string(status) + "): " + cmd + "\n" + out);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string script() { return std::string(BATON_SOURCE_DIR) + "/scripts/pg-private"; }

}  // namespace

PgInstance& PgInstance::shared() {
  static PgInstance instance;
  return instance;
}

PgInstance::PgInstance() {
  char tmpl[] = "/tmp/baton-test-pg-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::filesystem::permissions(dir_, std::filesystem::perms::owner_all | std::filesystem::perms::group_exec |
                                         std::filesystem::perms::others_exec);
  std::string url;
  try {
    url = run_command(script() + " start " + dir_ + "/pg baton");
  } catch (...) {
    run_command(script() + " stop " + dir_ + "/pg");
    throw;
  }
  auto colon = url.rfind(':');
  auto slash = url.rfind('/');
  port_ = std::stoi(url.substr(colon + 1, slash - colon - 1));
}

PgInstance::~PgInstance() {
  try {
    run_command(script() + " stop " + dir_ + "/pg");
    std::filesystem::remove_all(dir_);
  } catch (...) {
  }
}

std::string PgInstance::url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PgInstance::fresh_database(const std::string& prefix, bool migrated) {
  pqxx::connection admin(url("postgres"));
  pqxx::nontransaction tx(admin);
  if (migrated && !template_ready_) {
    tx.exec("CREATE DATABASE baton_template");
    auto r = store::pg::migrate(url("baton_template"), "test-template");
    if (!r) throw std::runtime_error("template migration failed: " + r.error().message);
    // The grants are the template's, so every copy has them.
    tx.exec("CREATE ROLE baton_runtime LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE");
    auto g = store::pg::grant_runtime_role(url("baton_template"), "baton_runtime");
    if (!g) throw std::runtime_error("granting the template's runtime role failed: " + g.error().message);
    template_ready_ = true;
  }
  std::string name = prefix + "_" + std::to_string(++next_db_);
  tx.exec("CREATE DATABASE " + admin.quote_name(name) + (migrated ? " TEMPLATE baton_template" : ""));
  return url(name);
}

std::string PgInstance::least_privilege_database(const std::string& prefix, int up_to) {
  const std::string name = prefix + "_" + std::to_string(++next_db_);
  {
    pqxx::connection admin(url("postgres"));
    pqxx::nontransaction tx(admin);
    // What docs/operations.md tells an operator to run, and nothing more.
    tx.exec("CREATE ROLE " + admin.quote_name(name) + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE");
    tx.exec("CREATE DATABASE " + admin.quote_name(name) + " OWNER " + admin.quote_name(name));
    tx.exec("REVOKE ALL ON DATABASE " + admin.quote_name(name) + " FROM PUBLIC");
  }
  const std::string as_role = "postgresql://" + name + "@127.0.0.1:" + std::to_string(port_) + "/" + name;
  auto r = store::pg::migrate(as_role, "least-privilege", up_to);
  if (!r) throw std::runtime_error("migrating as a least-privilege role failed: " + r.error().message);
  return as_role;
}

PgInstance::SeparateRoles PgInstance::separate_roles_database(const std::string& prefix, int up_to) {
  SeparateRoles out;
  out.owner_url = least_privilege_database(prefix, up_to);
  out.runtime_role = prefix + "_runtime_" + std::to_string(next_db_);
  {
    pqxx::connection admin(url("postgres"));
    pqxx::nontransaction tx(admin);
    tx.exec("CREATE ROLE " + admin.quote_name(out.runtime_role) + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE");
    tx.exec("CREATE ROLE " + admin.quote_name(out.runtime_role + "_ungranted") +
            " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE");
  }
  auto g = store::pg::grant_runtime_role(out.owner_url, out.runtime_role);
  if (!g) throw std::runtime_error("granting " + out.runtime_role + " failed: " + g.error().message);
  out.runtime_url = "postgresql://" + out.runtime_role + "@127.0.0.1:" + std::to_string(port_) +
                    out.owner_url.substr(out.owner_url.rfind('/'));
  out.ungranted_url = "postgresql://" + out.runtime_role + "_ungranted@127.0.0.1:" + std::to_string(port_) +
                      out.owner_url.substr(out.owner_url.rfind('/'));
  return out;
}

std::string PgInstance::runtime_url(const std::string& database_url) const {
  const std::string owner = "postgresql://postgres@";
  if (database_url.rfind(owner, 0) != 0) throw std::runtime_error("not one of fresh_database's URLs: " + database_url);
  return "postgresql://baton_runtime@" + database_url.substr(owner.size());
}

LeaseRow DbInspector::lease() const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  auto r =
      tx.exec1("SELECT epoch, coalesce(leader_id, ''), coalesce(leader_incarnation, ''), released FROM leader_lease");
  return {r[0].as<std::int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<bool>()};
}

std::vector<EpochRow> DbInspector::epoch_history() const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  std::vector<EpochRow> out;
  for (const auto& r : tx.exec("SELECT epoch, leader_id, leader_incarnation, end_reason FROM epoch_history"
                               " ORDER BY epoch")) {
    EpochRow e{r[0].as<std::int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(), std::nullopt};
    if (!r[3].is_null()) e.end_reason = r[3].as<std::string>();
    out.push_back(e);
  }
  return out;
}

std::vector<int> DbInspector::applied_migrations() const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  std::vector<int> out;
  for (const auto& r : tx.exec("SELECT version FROM schema_migrations ORDER BY version")) out.push_back(r[0].as<int>());
  return out;
}

std::int64_t DbInspector::count_rows(const std::string& table) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  return tx.exec1("SELECT count(*) FROM " + c.quote_name(table))[0].as<std::int64_t>();
}

struct TableLock::Held {
  pqxx::connection c;
  pqxx::work tx{c};
  explicit Held(const std::string& url) : c(url) {}
};

TableLock::TableLock(const std::string& url, const std::string& table) : held_(std::make_unique<Held>(url)) {
  held_->tx.exec("LOCK TABLE " + held_->tx.quote_name(table) + " IN ACCESS EXCLUSIVE MODE");
}

TableLock::~TableLock() = default;  // the transaction rolls back: the lock goes

void assign_run_by_hand(const std::string& url, std::int64_t run, const std::string& worker) {
  pqxx::connection c(url);
  pqxx::work tx(c);
  auto rows = tx.exec_params(
      "UPDATE job_runs SET state = 'ASSIGNED', version = version + 1, attempt = 1, assigned_worker_id = $2,"
      " assigned_at = now(), lease_token = gen_random_uuid(), leader_epoch = (SELECT epoch FROM leader_lease),"
      " history = history || ARRAY[version + 1, version, baton_run_history_code('ASSIGNED', 'NONE', 1),"
      " (SELECT epoch FROM leader_lease), txid_current(), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint,"
      " NULL] WHERE id = $1 AND state = 'PENDING' RETURNING id",
      run, worker);
  if (rows.empty()) throw std::runtime_error("assign_run_by_hand: run " + std::to_string(run) + " is not PENDING");
  tx.commit();
}

std::string DbInspector::scalar(const std::string& sql) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  auto rows = tx.exec(sql);
  if (rows.empty() || rows.columns() == 0 || rows[0][0].is_null()) return "";
  return rows[0][0].as<std::string>();
}

std::vector<int> DbInspector::backend_pids(const std::string& prefix) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  std::vector<int> out;
  for (const auto& r : tx.exec_params("SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1 || '%'", prefix))
    out.push_back(r[0].as<int>());
  return out;
}

}  // namespace baton::testing

namespace baton::testing {

namespace {
RunRowView read_run_row(const pqxx::row& r) {
  return {r[0].as<std::int64_t>(),
          r[1].as<std::string>(),
          r[2].as<int>(),
          r[3].is_null() ? "" : r[3].as<std::string>(),
          r[4].as<std::string>(),
          r[5].as<std::int64_t>(),
          r[6].is_null() ? "" : r[6].as<std::string>(),
          r[7].is_null() ? "" : r[7].as<std::string>(),
          r[8].as<double>(),
          r[9].as<double>()};
}
constexpr const char* run_columns =
    "SELECT r.id, r.state, r.attempt, r.assigned_worker_id, r.continuation_state, r.leader_epoch, j.name,"
    " r.lease_token::text, coalesce(extract(epoch FROM r.scheduled_for), 0)::float8,"
    " coalesce(extract(epoch FROM r.started_at), 0)::float8"
    " FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id ";
}  // namespace

std::optional<RunRowView> DbInspector::run(std::int64_t id) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  auto rows = tx.exec_params(std::string(run_columns) + "WHERE r.id = $1", id);
  if (rows.empty()) return std::nullopt;
  return read_run_row(rows[0]);
}

std::vector<RunRowView> DbInspector::runs_of_job(const std::string& job) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  std::vector<RunRowView> out;
  for (const auto& r : tx.exec_params(std::string(run_columns) + "WHERE j.name = $1 ORDER BY r.id", job))
    out.push_back(read_run_row(r));
  return out;
}

std::vector<AttemptRowView> DbInspector::attempts(std::int64_t run_id) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  std::vector<AttemptRowView> out;
  for (const auto& r :
       tx.exec_params("SELECT attempt, coalesce(worker_id, ''), outcome, exit_code, leader_epoch,"
                      " coalesce(extract(epoch FROM started_at), 0)::float8 FROM job_run_attempts WHERE run_id = $1"
                      " ORDER BY attempt",
                      run_id)) {
    AttemptRowView a{r[0].as<int>(), r[1].as<std::string>(),  r[2].as<std::string>(),
                     std::nullopt,   r[4].as<std::int64_t>(), r[5].as<double>()};
    if (!r[3].is_null()) a.exit_code = r[3].as<int>();
    out.push_back(a);
  }
  return out;
}

std::int64_t DbInspector::dead_letters(std::int64_t run_id) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  return tx.exec_params1("SELECT count(*) FROM dead_letters WHERE run_id = $1", run_id)[0].as<std::int64_t>();
}

void erase_run_as_pruned(const std::string& url, std::int64_t run_id) {
  pqxx::connection c(url);
  pqxx::work tx(c);
  tx.exec("SET LOCAL session_replication_role = replica");  // the write guards: only a test bypasses them
  for (const char* table : {"run_logs", "job_run_attempt_rows", "job_run_transitions_log", "decision_ledger"})
    tx.exec_params(std::string("DELETE FROM ") + table + " WHERE run_id = $1", run_id);
  tx.exec_params("DELETE FROM job_runs WHERE id = $1", run_id);
  tx.commit();
}

void age_finished_run(const std::string& url, std::int64_t run_id, int days) {
  pqxx::connection c(url);
  pqxx::work tx(c);
  tx.exec("SET LOCAL session_replication_role = replica");  // the write guards: only a test bypasses them
  tx.exec_params("UPDATE job_runs SET finished_at = finished_at - $2 * interval '1 day' WHERE id = $1", run_id, days);
  tx.commit();
}

std::string DbInspector::run_logs(std::int64_t run_id) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  std::string out;
  for (const auto& r : tx.exec_params("SELECT stream, chunk FROM run_logs WHERE run_id = $1 ORDER BY id", run_id))
    out += r[0].as<std::string>() + ":" + r[1].as<std::string>();
  return out;
}

std::vector<std::string> DbInspector::transitions(std::int64_t run_id) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  std::vector<std::string> out;
  for (const auto& r : tx.exec_params(
           "SELECT coalesce(from_state, '') || '->' || to_state || '@' || leader_epoch FROM job_run_transitions"
           " WHERE run_id = $1 ORDER BY to_version",
           run_id))
    out.push_back(r[0].as<std::string>());
  return out;
}

std::int64_t DbInspector::stale_epoch_writes() const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  return tx
      .exec1(
          "SELECT count(*) FROM job_run_transitions t JOIN epoch_history h ON h.epoch > t.leader_epoch"
          " WHERE pg_xact_commit_timestamp((t.xid % 4294967296)::text::xid)"
          " > pg_xact_commit_timestamp((h.election_xid % 4294967296)::text::xid)")[0]
      .as<std::int64_t>();
}

}  // namespace baton::testing
