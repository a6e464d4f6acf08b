// SQL tasks end to end, through libpq in the worker, and a task's own knobs
// (docs/scheduling.md, "Chains"): a real cluster, every call a real
// `baton ctl` process.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "cluster.h"
#include "ctl_fixture.h"

using namespace baton::testing;

// SQL tasks end to end, through libpq in the worker: a parameter arrives as
// a quoted literal (a quote in it cannot end the string), a psql shell
// escape is only a syntax error, and a timeout cancels the statement on the
// server (no backend is left running it).
TEST_F(CtlTest, SqlTasksQuoteTheirParametersHaveNoShellAndAreCanceledOnTheServer) {
  const std::string marker = cluster.dir() + "/pwned";
  std::filesystem::create_directories(cluster.dir() + "/sql");
  std::ofstream(cluster.dir() + "/sql/jobs.yaml")
      << "jobs:\n"
         "  - name: sql-greet\n"
         "    parameters: {who: \"O'Brien'); DROP TABLE job_runs; --\"}\n"
         "    tasks:\n"
         "      - {kind: SQL, connection: local, sql: \"SELECT 'hello ' || :'who' AS greeting\"}\n"
         "  - name: sql-shell\n"
         "    tasks:\n"
         "      - {kind: SQL, connection: local, sql: '\\! touch "
      << marker
      << "'}\n"
         "  - name: sql-slow\n"
         "    timeout: 2s\n"
         "    tasks:\n"
         "      - {kind: SQL, connection: local, sql: 'SELECT pg_sleep(60)'}\n"
         "  - name: sql-check\n"
         "    tasks:\n"
         "      - {kind: SQL, connection: local, sql: \"SELECT count(*) AS sleeping FROM pg_stat_activity WHERE "
         "application_name LIKE 'baton-run-%' AND query LIKE '%pg_sleep(60)%' AND state = 'active' AND pid <> "
         "pg_backend_pid()\"}\n"
         "  - name: sql-facts\n"
         "    tasks:\n"
         "      - {kind: SQL, connection: local, sql: \"SELECT current_setting('baton.previous_outcome') || ' ' || "
         "current_setting('baton.attempt') || ' ' || current_setting('baton.run_id') AS facts\"}\n";
  ASSERT_TRUE(applied(cluster.dir() + "/sql"));
  auto run_of = [&](const std::string& job) {
    return std::to_string(std::stoll(ctl({"jobs", "trigger", job}).output));
  };

  const std::string greet = run_of("sql-greet");
  auto logs = ctl({"logs", "-f", greet, "--interval", "200ms"});
  EXPECT_EQ(logs.code, 0) << logs.output;
  EXPECT_NE(logs.output.find("greeting\nhello O'Brien'); DROP TABLE job_runs; --\n(1 row)"), std::string::npos)
      << logs.output;

  const std::string shell = run_of("sql-shell");
  logs = ctl({"logs", "-f", shell, "--interval", "200ms"});
  EXPECT_NE(logs.code, 0) << "a psql meta-command is not SQL: " << logs.output;
  EXPECT_NE(logs.output.find("syntax error"), std::string::npos) << logs.output;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "no shell ran";

  const std::string slow = run_of("sql-slow");
  EXPECT_TRUE(cluster.wait_for_state(std::stoll(slow), "TIMED_OUT", 20s));
  const std::string check = run_of("sql-check");
  logs = ctl({"logs", "-f", check, "--interval", "200ms"});
  EXPECT_NE(logs.output.find("sleeping\n0\n(1 row)"), std::string::npos) << logs.output;

  // What a PROGRAM task gets as BATON_* variables, a SQL task's session has
  // as baton.* settings (docs/scheduling.md, "What became of the previous
  // attempt").
  const std::string facts = run_of("sql-facts");
  logs = ctl({"logs", "-f", facts, "--interval", "200ms"});
  EXPECT_EQ(logs.code, 0) << logs.output;
  EXPECT_NE(logs.output.find("facts\nnone 1 " + facts + "\n(1 row)"), std::string::npos) << logs.output;
}

// A task's own role, timeout and parameters, and the job's on_error: the
// SQL task runs as the role it names (and fails when its connection may not
// take it), a task over its own timeout fails while the run's chain goes on
// under on_error continue, each task reads its own parameter values, and the
// run that failed for good makes one run of its on_error job, which reads
// what failed.
TEST_F(CtlTest, ATasksOwnKnobsAndTheJobsOnErrorEndToEnd) {
  cluster.db().scalar(
      "CREATE ROLE baton_task_reader NOLOGIN; GRANT baton_task_reader TO CURRENT_USER;"
      " CREATE SCHEMA task_area AUTHORIZATION baton_task_reader;"
      " CREATE TABLE task_area.task_owned (x int); ALTER TABLE task_area.task_owned OWNER TO baton_task_reader");
  std::filesystem::create_directories(cluster.dir() + "/knobs");
  std::ofstream(cluster.dir() + "/knobs/jobs.yaml") << R"yaml(jobs:
  - name: as-reader
    tasks:
      - {kind: SQL, connection: local, run_as: baton_task_reader, sql: "SELECT current_user AS who"}
  - name: as-nobody
    tasks:
      - {kind: SQL, connection: local, run_as: baton_no_such_role, sql: "SELECT 1"}
  - name: maintain-as-owner
    tasks:
      - {kind: SQL, connection: local, run_as: baton_task_reader, sql: "VACUUM (ANALYZE) task_area.task_owned"}
      - {kind: SQL, connection: local, run_as: baton_task_reader,
         sql: "CREATE INDEX CONCURRENTLY task_owned_x ON task_area.task_owned (x)"}
  - name: etl
    on_error: page
    parameters: {table: orders}
    tasks:
      - {kind: BUILTIN, builtin: SLEEP, argument: 30s, timeout: 300ms, on_error: continue}
      - {kind: BUILTIN, builtin: LOG, argument: "load {{param.table}}", parameters: {table: invoices}}
      - {kind: BUILTIN, builtin: LOG, argument: "load {{param.table}}"}
  - name: page
    tasks:
      - {kind: BUILTIN, builtin: LOG, argument: "{{param.failed_job}} run {{param.failed_run}} {{param.final_state}}"}
)yaml";
  auto applied = ctl({"apply", "-f", cluster.dir() + "/knobs"});
  ASSERT_EQ(applied.code, 0) << applied.output;
  auto run_of = [&](const std::string& job) {
    return std::to_string(std::stoll(ctl({"jobs", "trigger", job}).output));
  };

  auto logs = ctl({"logs", "-f", run_of("as-reader"), "--interval", "200ms"});
  EXPECT_EQ(logs.code, 0) << logs.output;
  EXPECT_NE(logs.output.find("who\nbaton_task_reader\n(1 row)"), std::string::npos) << logs.output;
  logs = ctl({"logs", "-f", run_of("as-nobody"), "--interval", "200ms"});
  EXPECT_NE(logs.code, 0);
  EXPECT_NE(logs.output.find("baton_no_such_role"), std::string::npos) << logs.output;
  // What a task in a session of its own is for (pg_timetable's autonomous
  // tasks): statements PostgreSQL refuses inside a transaction block, run
  // as another role. They failed while run_as was a "SET ROLE" in front of
  // the text ("cannot run inside a transaction block").
  const std::string maintain = run_of("maintain-as-owner");
  logs = ctl({"logs", "-f", maintain, "--interval", "200ms"});
  EXPECT_EQ(logs.code, 0) << logs.output;
  EXPECT_TRUE(cluster.wait_for_state(std::stoll(maintain), "SUCCEEDED", 20s)) << logs.output;
  EXPECT_EQ(cluster.db().scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'task_owned_x'"), "1");
  EXPECT_TRUE(wait_until(
      [&] {
        return cluster.db().scalar(
                   "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'task_owned'") == "t";
      },
      5s))
      << "VACUUM (ANALYZE) ran";

  const std::string etl = run_of("etl");
  EXPECT_TRUE(cluster.wait_for_state(std::stoll(etl), "FAILED", 20s));
  auto shown = ctl({"runs", "show", etl, "-o", "json"}).output;
  EXPECT_NE(shown.find("timed out after its timeout of 300ms"), std::string::npos) << shown;
  logs = ctl({"logs", etl});
  EXPECT_NE(logs.output.find("load invoices\nload orders\n"), std::string::npos) << logs.output;
  // One run of page, made by the failure, reading what failed.
  std::string pages;
  ASSERT_TRUE(wait_until(
      [&] {
        pages = ctl({"runs", "list", "--job", "page", "--state", "SUCCEEDED", "-o", "json"}).output;
        return pages.find("\"trigger_kind\":\"on_error\"") != std::string::npos;
      },
      20s))
      << pages;
  const std::string page = std::to_string(number_after(pages, "id"));
  EXPECT_EQ(ctl({"logs", page}).output, "etl run " + etl + " FAILED\n");
}
