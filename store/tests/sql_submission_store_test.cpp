// Submission inside the application's own transaction (schemas/0036)
// against real PostgreSQL: baton.trigger and baton.emit_event commit or roll
// back with the caller's transaction, refuse what the API would refuse in
// that transaction, and the leader turns each committed submission into
// exactly one run in one fenced statement; the submitter role can do
// nothing else.
#include <gtest/gtest.h>

#include "baton/store_pg/migrate.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

const std::vector<std::string> default_denylist{"password", "passwd", "secret",      "_token",    "=token",
                                                "api_key",  "apikey", "private_key", "-----BEGIN"};

class SqlSubmissionTest : public ElectedStoreTest {
 protected:
  SqlSubmissionTest() : ElectedStoreTest("sqlsubmit") {
    app_url = login_role(app_role);
    EXPECT_TRUE(grant_submitter_role(url, app_role));
  }

  /// A new login role (roles are the cluster's: named after this test's
  /// database, so that no two tests share one) and its URL to this database.
  std::string login_role(const std::string& role) {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE ROLE " + c.quote_name(role) + " LOGIN");
    return "postgresql://" + role + "@" + url.substr(url.find('@') + 1);
  }

  void job(const std::string& name, const std::string& rules_json = "{}") {
    JobDefinition j;
    j.name = name;
    j.parameter_rules_json = rules_json;
    ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  }

  /// Runs `sql` as the application, in a transaction of its own that
  /// commits (or rolls back), and returns the first column of its first row.
  std::string as_app(const std::string& sql, bool commit = true) {
    pqxx::connection c(app_url);
    pqxx::work tx(c);
    auto r = tx.exec1(sql);
    std::string out = r[0].is_null() ? "NULL" : r[0].as<std::string>();
    if (commit)
      tx.commit();
    else
      tx.abort();
    return out;
  }
  /// The message `sql` raises as the application (empty: none).
  std::string raised(const std::string& sql) {
    try {
      as_app(sql);
    } catch (const pqxx::sql_error& e) {
      return e.what();
    }
    return "";
  }

  SubmissionsProcessed take(Epoch as) {
    auto r = leader.process_submissions(as, 100, default_denylist);
    EXPECT_TRUE(r);
    return r ? *r : SubmissionsProcessed{};
  }

  const std::string app_role = url.substr(url.rfind('/') + 1) + "_app";
  std::string app_url;
};

}  // namespace

TEST_F(SqlSubmissionTest, ARolledBackTransactionSubmitsNothing) {
  job("report");
  const std::string id = as_app("SELECT baton.trigger('report', '{}', 'k-1')", false);
  EXPECT_NE(id, "NULL");
  EXPECT_EQ(text("SELECT count(*) FROM submissions"), "0");
  EXPECT_EQ(take(epoch).submissions, 0);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), "0");
}

TEST_F(SqlSubmissionTest, ACommittedSubmissionBecomesOneRunWithItsParametersOnce) {
  job("report", R"({"customer": {"required": true}})");
  const std::string id =
      as_app("SELECT baton.trigger('report', '{\"customer\": \"acme\"}', NULL, now() + interval '1 hour')");
  EXPECT_EQ(as_app("SELECT status FROM baton.submission(" + id + ")"), "pending");

  auto p = take(epoch);
  EXPECT_EQ(p.submissions, 1);
  EXPECT_EQ(p.runs, 1);
  EXPECT_EQ(p.refused, 0);
  EXPECT_EQ(text("SELECT trigger_kind || ' ' || (payload->'parameters'->>'customer') || ' ' ||"
                 " (start_after > now() + interval '59 minutes') || ' ' || submission_id FROM job_runs"),
            "sql acme true " + id);
  const std::string run = text("SELECT id FROM job_runs");
  EXPECT_EQ(as_app("SELECT status || ' ' || run_id || ' ' || run_state FROM baton.submission(" + id + ")"),
            "created " + run + " PENDING");
  EXPECT_EQ(text("SELECT (details->>'submission_id') || ' ' || (details->>'submitted_by') FROM decision_ledger"
                 " WHERE decision = 'created' AND reason = 'sql' AND run_id = " +
                 run),
            id + " sql:" + app_role);
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE action = 'job.trigger'"), "0")
      << "the leader's loop never waits on the audit log";
  // Taken once, however often the leader asks.
  EXPECT_EQ(take(epoch).submissions, 0);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), "1");
}

TEST_F(SqlSubmissionTest, BadInputRaisesInTheCallersTransactionNamingWhatWasWrong) {
  job("report", R"({"customer": {"required": true}, "mode": {"enum": ["full", "delta"]}})");
  EXPECT_NE(raised("SELECT baton.trigger('nope')").find("baton.trigger: unknown job 'nope'"), std::string::npos);
  EXPECT_NE(raised("SELECT baton.trigger('report', '[1]')").find("parameters must be a JSON object"),
            std::string::npos);
  EXPECT_NE(raised("SELECT baton.trigger('report', '{}')").find("parameter 'customer' is required"), std::string::npos);
  EXPECT_NE(raised("SELECT baton.trigger('report', '{\"customer\": \"a\", \"mode\": \"half\"}')")
                .find("parameter 'mode' must be one of 'full', 'delta', got 'half'"),
            std::string::npos);
  EXPECT_NE(raised("SELECT baton.trigger('report', '{\"customer\": \"a\", \"db_password\": \"x\"}')")
                .find("parameters.db_password: the name contains \"password\": secrets do not belong"),
            std::string::npos);
  EXPECT_NE(raised("SELECT baton.trigger('report', '{\"customer\": \"a\"}', '')").find("idempotency_key must be 1-200"),
            std::string::npos);
  EXPECT_NE(raised("SELECT baton.trigger('report', '{\"customer\": \"a\"}', NULL, now() + interval '2 years')")
                .find("run_at at most a year ahead"),
            std::string::npos);
  EXPECT_NE(raised("SELECT baton.emit_event('job.succeeded:x')").find("reserved for run_after"), std::string::npos);
  EXPECT_NE(
      raised("SELECT baton.emit_event('deploy', '{\"token\": \"x\"}')").find("payload.token: the name is \"token\""),
      std::string::npos);
  EXPECT_EQ(text("SELECT count(*) FROM submissions"), "0");
  EXPECT_EQ(text("SELECT count(*) FROM events"), "0");
}

TEST_F(SqlSubmissionTest, AnIdempotencyKeyNamesOneRunAcrossSubmissionsAndTheApi) {
  job("report");
  const std::string a = as_app("SELECT baton.trigger('report', NULL, 'order-7')");
  const std::string b = as_app("SELECT baton.trigger('report', NULL, 'order-7')");
  auto p = take(epoch);
  EXPECT_EQ(p.submissions, 2);
  EXPECT_EQ(p.runs, 1);
  const std::string run = text("SELECT id FROM job_runs");
  EXPECT_EQ(as_app("SELECT status || ' ' || run_id FROM baton.submission(" + a + ")"), "created " + run);
  EXPECT_EQ(as_app("SELECT status || ' ' || run_id FROM baton.submission(" + b + ")"), "existing " + run);

  // A key another caller (here an API token) used first for this job is
  // refused, not answered with that caller's run (schemas/0048, security
  // review N3); the same key on another job is that job's own.
  auto api = admin.trigger(Actor{"test", epoch}, "report", std::string("order-8"), std::nullopt);
  ASSERT_TRUE(api);
  const std::string c = as_app("SELECT baton.trigger('report', NULL, 'order-8')");
  EXPECT_EQ(take(epoch).runs, 0);
  EXPECT_EQ(as_app("SELECT status || ' ' || coalesce(run_id::text, '-') FROM baton.submission(" + c + ")"),
            "refused -");
  EXPECT_EQ(text("SELECT refusal FROM submissions WHERE id = " + c),
            "idempotency key 'order-8' is taken by another caller for this job");
  job("invoice");
  const std::string other_job = as_app("SELECT baton.trigger('invoice', NULL, 'order-8')");
  EXPECT_EQ(take(epoch).runs, 1);
  EXPECT_EQ(as_app("SELECT status FROM baton.submission(" + other_job + ")"), "created");

  // A key whose run finished within the remembered window still names it.
  const RunId done{std::stoll(run)};
  auto a2 = runs.assign({done, Version{1}, epoch}, "w1");
  ASSERT_TRUE(a2);
  AttemptFence f{"w1", a2->attempt, a2->lease_token};
  auto started = runs.start({done, a2->new_version, epoch}, f, Millis{1000});
  Finish fin;
  fin.final_state = RunState::succeeded;
  ASSERT_EQ(runs.finish({done, started->new_version, epoch}, f, fin)->outcome, WriteOutcome::applied);
  const std::string d = as_app("SELECT baton.trigger('report', NULL, 'order-7')");
  EXPECT_EQ(take(epoch).runs, 0) << "a finished run's key is remembered for a day";
  EXPECT_EQ(as_app("SELECT status || ' ' || run_id FROM baton.submission(" + d + ")"),
            "existing " + std::to_string(done.value));
}

TEST_F(SqlSubmissionTest, AStaleLeaderTakesNothingAndTheNextOneTakesEachSubmissionOnce) {
  job("report");
  as_app("SELECT baton.trigger('report')");
  const Epoch newer = force_election(url, "n2");
  auto stale = take(epoch);
  EXPECT_EQ(stale.current_epoch, newer);
  EXPECT_EQ(stale.submissions, 0);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), "0");
  EXPECT_EQ(take(newer).runs, 1);
  EXPECT_EQ(take(newer).runs, 0);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs WHERE leader_epoch = " + std::to_string(newer.value)), "1");
}

TEST_F(SqlSubmissionTest, TheLeaderJudgesAgainWhatChangedSinceTheSubmission) {
  job("report", R"({"customer": {}})");
  job("gone");
  const std::string a = as_app("SELECT baton.trigger('gone')");
  ASSERT_TRUE(admin.delete_job(Actor{"test", epoch}, "gone", std::nullopt));
  const std::string b = as_app("SELECT baton.trigger('report', '{\"customer\": \"acme\"}')");
  // This node's denylist refuses the name; it is published for the next
  // submission to be refused in its own transaction.
  auto p = leader.process_submissions(epoch, 100, {"customer"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->submissions, 2);
  EXPECT_EQ(p->refused, 2);
  EXPECT_EQ(p->runs, 0);
  EXPECT_EQ(as_app("SELECT status || ': ' || refusal FROM baton.submission(" + a + ")"),
            "refused: job 'gone' was deleted before the leader took the submission");
  EXPECT_NE(as_app("SELECT refusal FROM baton.submission(" + b + ")").find("parameters.customer: the name contains"),
            std::string::npos);
  EXPECT_NE(raised("SELECT baton.trigger('report', '{\"customer\": \"acme\"}')").find("contains \"customer\""),
            std::string::npos);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), "0");
}

TEST_F(SqlSubmissionTest, AnEventCommitsWithTheCallerAndIsRecordedOncePerDedupeKey) {
  JobDefinition j;
  j.name = "deployer";
  j.on_events = {"deploy"};
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  as_app("SELECT baton.emit_event('deploy', '{\"v\": 1}', 'd-1')", false);
  EXPECT_EQ(text("SELECT count(*) FROM events"), "0");
  const std::string first = as_app("SELECT baton.emit_event('deploy', '{\"v\": 1}', 'd-1')");
  EXPECT_EQ(as_app("SELECT baton.emit_event('deploy', '{\"v\": 2}', 'd-1')"), first);
  EXPECT_EQ(text("SELECT created_by FROM events"), "sql:" + app_role);
  EXPECT_EQ(leader.process_events(epoch, 100)->runs, 1);
  // A dedupe key is per kind and per caller (schemas/0048): another
  // caller's (here an API token's) is refused in the caller's transaction.
  ASSERT_TRUE(admin.post_event(Actor{"test", epoch}, "deploy", "{}", std::string("d-2")));
  EXPECT_NE(raised("SELECT baton.emit_event('deploy', '{}', 'd-2')").find("'d-2' of kind 'deploy' was used by another"),
            std::string::npos);
  EXPECT_NE(as_app("SELECT baton.emit_event('rollback', '{}', 'd-2')"), "NULL");  // another kind, another event
}

TEST_F(SqlSubmissionTest, TheSubmitterRoleCanDoNothingElse) {
  job("report");
  auto refused = [&](const std::string& sql) { return raised(sql).find("permission denied") != std::string::npos; };
  EXPECT_TRUE(refused("SELECT count(*) FROM job_runs"));
  EXPECT_TRUE(refused("SELECT count(*) FROM submissions"));
  EXPECT_TRUE(refused("INSERT INTO submissions (job_definition_id, job_name, submitted_by) VALUES (1, 'x', 'y')"));
  EXPECT_TRUE(refused("SELECT count(*) FROM job_definitions"));
  EXPECT_TRUE(refused("UPDATE settings SET value = '1' WHERE key = 'retention_days'"));
  // Another application's submissions are not its to read.
  const std::string mine = as_app("SELECT baton.trigger('report')");
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("UPDATE submissions SET submitted_by = 'sql:someone_else'");
  }
  EXPECT_EQ(as_app("SELECT count(*) FROM baton.submission(" + mine + ")"), "0");
  // Without the grant, not even the functions.
  const std::string ungranted = login_role(app_role + "_ungranted");
  bool denied = false;
  try {
    pqxx::connection c(ungranted);
    pqxx::work tx(c);
    tx.exec("SELECT baton.trigger('report')");
  } catch (const pqxx::sql_error& e) {
    denied = std::string(e.what()).find("permission denied") != std::string::npos;
  }
  EXPECT_TRUE(denied);
}

TEST_F(SqlSubmissionTest, ACommitWakesAWaiterAndARollbackDoesNot) {
  job("report");
  PgLeaderStore waiter(url, "test-inbox");
  ASSERT_TRUE(waiter.await_inbox(Millis{1}));  // LISTENs
  as_app("SELECT baton.trigger('report')", false);
  auto quiet = waiter.await_inbox(Millis{300});
  ASSERT_TRUE(quiet);
  EXPECT_FALSE(*quiet) << "a rolled-back submission notifies no one";
  as_app("SELECT baton.trigger('report')");
  auto woken = waiter.await_inbox(Millis{5000});
  ASSERT_TRUE(woken);
  EXPECT_TRUE(*woken);
}

namespace {

/// `calls` statements as the application in one transaction; the message
/// the last raises (empty: none), and its SQLSTATE.
std::pair<std::string, std::string> raised_in_one(const std::string& app_url, const std::vector<std::string>& calls) {
  try {
    pqxx::connection c(app_url);
    pqxx::work tx(c);
    for (const auto& sql : calls) tx.exec(sql);
    tx.commit();
  } catch (const pqxx::insufficient_privilege& e) {
    return {e.what(), "42501"};  // libpqxx 6.4 throws this one without its SQLSTATE
  } catch (const pqxx::sql_error& e) {
    return {e.what(), e.sqlstate()};
  }
  return {"", ""};
}

}  // namespace

// Security review N4: a grant names the jobs and event kinds a role may
// submit (none named: all), and a later grant replaces it.
TEST_F(SqlSubmissionTest, AGrantLimitsTheJobsAndKindsARoleMayName) {
  job("report");
  job("payroll");
  SubmitterScope scope;
  scope.jobs = {"report"};
  scope.event_kinds = {"deploy"};
  ASSERT_TRUE(grant_submitter_role(url, app_role, scope));
  EXPECT_EQ(raised("SELECT baton.trigger('report')"), "");
  auto job_refused = raised_in_one(app_url, {"SELECT baton.trigger('payroll')"});
  EXPECT_NE(job_refused.first.find("baton.trigger: role " + app_role +
                                   " may not trigger job 'payroll': its grant"
                                   " names report"),
            std::string::npos)
      << job_refused.first;
  EXPECT_EQ(job_refused.second, "42501");
  EXPECT_EQ(raised("SELECT baton.emit_event('deploy')"), "");
  auto kind_refused = raised_in_one(app_url, {"SELECT baton.emit_event('payroll.run')"});
  EXPECT_NE(kind_refused.first.find("baton.emit_event: role " + app_role + " may not emit kind 'payroll.run'"),
            std::string::npos)
      << kind_refused.first;
  EXPECT_EQ(kind_refused.second, "42501");
  EXPECT_EQ(text("SELECT count(*) FROM submissions"), "1");
  // Granted again without a scope: every job and kind.
  ASSERT_TRUE(grant_submitter_role(url, app_role));
  EXPECT_EQ(raised("SELECT baton.trigger('payroll')"), "");
  EXPECT_EQ(raised("SELECT baton.emit_event('payroll.run')"), "");
  EXPECT_EQ(
      text("SELECT count(*) FROM audit_log WHERE action = 'submitter.grant' AND subject = 'role:" + app_role + "'"),
      "3")
      << "the fixture's grant and both here";
  EXPECT_EQ(text("SELECT details->>'jobs' FROM audit_log WHERE action = 'submitter.grant' ORDER BY id DESC LIMIT 1"),
            "NULL")
      << "all jobs";
}

// The budgets: submissions and events a second, runs scheduled ahead, the
// bytes of one submission or event; each refused in the caller's
// transaction with SQLSTATE 53400 (54000 for the bytes) and the figure.
TEST_F(SqlSubmissionTest, ABudgetIsRefusedInTheCallersTransactionNamingTheFigure) {
  job("report");
  SubmitterScope scope;
  scope.per_second = 3;
  scope.max_scheduled = 2;
  scope.max_bytes = 100;
  ASSERT_TRUE(grant_submitter_role(url, app_role, scope));
  const std::string once = "SELECT baton.trigger('report')";
  auto fourth = raised_in_one(app_url, {once, once, once, once});
  EXPECT_NE(fourth.first.find("baton.trigger: role " + app_role + " submitted 3 runs in the last second, its budget"),
            std::string::npos)
      << fourth.first;
  EXPECT_EQ(fourth.second, "53400");
  EXPECT_EQ(raised_in_one(app_url, {once, once, once}).first, "") << "within the budget";
  const std::string event = "SELECT baton.emit_event('deploy')";
  auto events = raised_in_one(app_url, {event, event, event, event});
  EXPECT_NE(events.first.find("emitted 3 events in the last second, its budget"), std::string::npos) << events.first;
  EXPECT_EQ(events.second, "53400");

  scope.per_second = 100;
  ASSERT_TRUE(grant_submitter_role(url, app_role, scope));
  const std::string ahead = "SELECT baton.trigger('report', NULL, NULL, now() + interval '1 hour')";
  EXPECT_EQ(raised_in_one(app_url, {ahead, ahead}).first, "");
  auto third = raised_in_one(app_url, {ahead});
  EXPECT_NE(third.first.find("role " + app_role + " has 2 runs scheduled ahead, its budget"), std::string::npos)
      << third.first;
  EXPECT_EQ(third.second, "53400");
  EXPECT_EQ(raised_in_one(app_url, {"SELECT baton.trigger('report', NULL, NULL, now() + interval '30 seconds')"}).first,
            "")
      << "a run due within the minute is not ahead";
  // Taken by the leader, they still count until their time.
  take(epoch);
  EXPECT_NE(raised_in_one(app_url, {ahead}).first.find("its budget"), std::string::npos);

  const std::string big = "SELECT baton.trigger('report', jsonb_build_object('note', repeat('x', 200)))";
  auto bytes = raised_in_one(app_url, {big});
  EXPECT_NE(bytes.first.find("parameters take "), std::string::npos) << bytes.first;
  EXPECT_NE(bytes.first.find(" bytes, at most 100 for role " + app_role), std::string::npos) << bytes.first;
  EXPECT_EQ(bytes.second, "54000");
  auto payload =
      raised_in_one(app_url, {"SELECT baton.emit_event('deploy', jsonb_build_object('n', repeat('x', 200)))"});
  EXPECT_NE(payload.first.find("at most 100 for role"), std::string::npos) << payload.first;
}

// Every submission and event is in the audit log, actor sql:<role>, in the
// caller's transaction: a rolled-back one is not. Parameters by name only.
TEST_F(SqlSubmissionTest, EverySubmissionAndEventIsAuditedWithTheRolesNameInTheCallersTransaction) {
  job("report", R"({"customer": {"required": true}})");
  const std::string id = as_app("SELECT baton.trigger('report', '{\"customer\": \"acme\"}', 'k-1')");
  as_app("SELECT baton.trigger('report', '{\"customer\": \"other\"}')", false);
  const std::string ev = as_app("SELECT baton.emit_event('deploy', '{\"sha\": \"abc\"}', 'd-1')");
  EXPECT_EQ(text("SELECT actor || ' ' || subject || ' ' || (details->>'submission_id') || ' ' ||"
                 " (details->>'idempotency_key') || ' ' || (details->'parameters')::text FROM audit_log"
                 " WHERE action = 'job.submit'"),
            "sql:" + app_role + " job:report " + id + " k-1 [\"customer\"]")
      << "one entry: the rolled-back submission has none";
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE details::text LIKE '%acme%'"), "0") << "names, not values";
  EXPECT_EQ(text("SELECT actor || ' ' || subject || ' ' || (details->>'kind') || ' ' || (details->>'dedupe_key')"
                 " FROM audit_log WHERE action = 'event.post'"),
            "sql:" + app_role + " event:" + ev + " deploy d-1");
  // The same event again (its dedupe key) is not a second entry.
  EXPECT_EQ(as_app("SELECT baton.emit_event('deploy', '{\"sha\": \"abc\"}', 'd-1')"), ev);
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE action = 'event.post'"), "1");
  // Chained like every entry (schemas/0042).
  EXPECT_EQ(
      text("SELECT count(*) FROM audit_log WHERE action IN ('job.submit', 'event.post') AND receipt_hash IS NULL"),
      "0");
}
