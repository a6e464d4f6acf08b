// Overlap control in the database (schemas/0010), against real PostgreSQL:
// whatever a leader asks, a limited job's run becomes active only holding a
// free instance number within the limit, an exclusive job's run only
// holding the one exclusive lock (mutually_exclusive), both released when
// the run ends; due
// runs of a job at its limit are not even read; cron slots of forbid and
// replace jobs.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>

#include "overlap_fixture.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

TEST_F(OverlapStoreTest, ALimitedJobsRunsHoldDistinctNumbersWithinTheLimit) {
  job("limited", 2);
  const RunId a = run_of("limited"), b = run_of("limited"), c = run_of("limited");
  auto without = assign(a, std::nullopt);
  ASSERT_FALSE(without) << "a limited job's run cannot become active without a number";
  EXPECT_NE(without.error().message.find("must hold an instance number from 1 to 2"), std::string::npos)
      << without.error().message;
  // The single-row assignment cannot take a number at all: refused alike.
  auto single = runs.assign({a, Version{1}, epoch}, "w1");
  ASSERT_FALSE(single) << "the single-row assignment of a limited job's run";
  EXPECT_NE(single.error().message.find("must hold an instance number from 1 to 2"), std::string::npos)
      << single.error().message;
  EXPECT_TRUE(applied(assign(a, 1), a));
  EXPECT_FALSE(assign(b, 1)) << "a number held by another active run";
  EXPECT_FALSE(assign(b, 3)) << "a number above the limit";
  EXPECT_TRUE(applied(assign(b, 2), b));
  EXPECT_FALSE(assign(c, 1));

  // Ending a run releases its number.
  auto row = runs.read_run(a);
  ASSERT_TRUE(row && *row);
  EXPECT_EQ((*row)->job_name, "limited") << "a run read alone names its job (a late success is counted under it)";
  ASSERT_EQ(runs.cancel({a, (*row)->version, epoch}, RunState::assigned, "test")->outcome, WriteOutcome::applied);
  EXPECT_TRUE(applied(assign(c, 1), c));
}

TEST_F(OverlapStoreTest, OneMutuallyExclusiveRunAtATimeAcrossJobs) {
  job("x", std::nullopt, "allow", true);
  job("y", std::nullopt, "allow", true);
  job("free", std::nullopt);
  const RunId x = run_of("x"), y = run_of("y"), f = run_of("free");
  EXPECT_FALSE(assign(x, std::nullopt, false)) << "a mutually exclusive job's run must take the lock";
  EXPECT_TRUE(applied(assign(x, std::nullopt, true), x));
  EXPECT_FALSE(assign(y, std::nullopt, true)) << "the lock is held";
  EXPECT_TRUE(applied(assign(f, std::nullopt), f)) << "other jobs are not held";
}

TEST_F(OverlapStoreTest, DueRunsOfAJobAtItsLimitAreNotRead) {
  job("single", 1);
  const RunId a = run_of("single"), b = run_of("single");
  auto due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ(due->front().instance_limit, 1);
  ASSERT_TRUE(applied(assign(a, 1), a));
  due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  EXPECT_TRUE(due->empty()) << "run " << b.value << " waits without filling the batch";
}

TEST_F(OverlapStoreTest, ForbidSkipsASlotWhileARunIsUnfinishedAndReplaceNamesTheRunsToCancel) {
  job("forbidding", std::nullopt, "forbid", false, "* * * * *");
  job("replacing", std::nullopt, "replace", false, "* * * * *");
  constexpr std::int64_t slot = 1767225600;
  ASSERT_EQ(leader.create_cron_run(epoch, "forbidding", slot, false, 0)->outcome, WriteOutcome::applied);
  auto skipped = leader.create_cron_run(epoch, "forbidding", slot + 60, false, 0);
  ASSERT_TRUE(skipped);
  EXPECT_TRUE(skipped->forbidden);
  EXPECT_NE(skipped->outcome, WriteOutcome::applied);
  auto jobs = leader.scheduled_jobs();
  for (const auto& j : *jobs) {
    if (j.name == "forbidding") {
      EXPECT_EQ(j.last_slot_unix, slot + 60) << "the cursor passes the skipped slot";
    }
  }

  auto first = leader.create_cron_run(epoch, "replacing", slot, false, 0);
  ASSERT_EQ(first->outcome, WriteOutcome::applied);
  EXPECT_TRUE(first->replaced.empty());
  auto second = leader.create_cron_run(epoch, "replacing", slot + 60, false, 0);
  ASSERT_EQ(second->outcome, WriteOutcome::applied);
  ASSERT_EQ(second->replaced.size(), 1u);
  EXPECT_EQ(second->replaced[0], first->run);
}

// A trigger hands its run to the leader as the insert returned it: the same
// row the dispatcher's own read makes, audited in the same statement, and
// only when the run may be assigned now (a limited or exclusive job's run
// waits for the dispatcher's read, which counts the holders).
TEST_F(OverlapStoreTest, ATriggeredRunComesBackAsTheDispatcherReadsItUnlessItsJobIsLimited) {
  job("free", std::nullopt);
  job("limited", 1);
  job("alone", std::nullopt, "allow", true);
  auto t =
      admin.trigger(Actor{"tester", epoch}, "free", std::string("key-1"), std::string(R"({"parameters":{"a":"1"}})"));
  ASSERT_TRUE(t && t->outcome == WriteOutcome::applied);
  ASSERT_TRUE(t->due.has_value());
  auto read = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(read);
  ASSERT_EQ(read->size(), 1u);
  const DueRun& d = (*read)[0];
  EXPECT_EQ(t->due->id, d.id);
  EXPECT_EQ(t->due->version, d.version);
  EXPECT_EQ(t->due->state, RunState::pending);
  EXPECT_EQ(t->due->job_name, "free");
  EXPECT_EQ(t->due->tasks_json, d.tasks_json);
  EXPECT_EQ(t->due->parameters, d.parameters);
  EXPECT_EQ(t->due->parameters.at("a"), "1");
  EXPECT_EQ(t->due->instance_limit, std::nullopt);
  EXPECT_EQ(text("SELECT actor || ' ' || subject || ' ' || (details->>'run_id') || ' ' || (details->'parameters')::text"
                 " FROM audit_log WHERE action = 'job.trigger'"),
            "tester job:free " + std::to_string(t->run.value) + " [\"a\"]");

  auto again =
      admin.trigger(Actor{"tester", epoch}, "free", std::string("key-1"), std::string(R"({"parameters":{"a":"1"}})"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->outcome, WriteOutcome::conflict);
  EXPECT_EQ(again->earlier, t->run) << "the answer names the run the key created";
  EXPECT_FALSE(again->due.has_value());
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE action = 'job.trigger'"), "1") << "nothing written: no audit";

  for (const char* name : {"limited", "alone"}) {
    auto held = admin.trigger(Actor{"tester", epoch}, name, std::nullopt, std::nullopt);
    ASSERT_TRUE(held && held->outcome == WriteOutcome::applied) << name;
    EXPECT_FALSE(held->due.has_value()) << name;
  }
  auto fenced = admin.trigger(Actor{"tester", Epoch{epoch.value - 1}}, "free", std::nullopt, std::nullopt);
  ASSERT_TRUE(fenced);
  EXPECT_EQ(fenced->outcome, WriteOutcome::fenced);
  EXPECT_FALSE(fenced->due.has_value());
}

// An Idempotency-Key names one submission: a retry whose first answer was
// lost gets the run the key created, also once that run has finished (the
// 30-minute chaos run of seed 7 ran a job twice when the key was free again
// at the finish), until the remembered window has passed (schemas/0025).
TEST_F(OverlapStoreTest, AnIdempotencyKeyNamesItsRunUntilADayAfterItFinished) {
  job("free", std::nullopt);
  auto first = admin.trigger(Actor{"tester", epoch}, "free", std::string("key-1"), std::nullopt);
  ASSERT_TRUE(first && first->outcome == WriteOutcome::applied);
  ASSERT_EQ(runs.cancel({first->run, Version{1}, epoch}, RunState::pending, "done")->outcome, WriteOutcome::applied);
  ASSERT_NE(text("SELECT finished_at FROM job_runs WHERE id = " + std::to_string(first->run.value)), "NULL");

  auto retry = admin.trigger(Actor{"tester", epoch}, "free", std::string("key-1"), std::nullopt);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->outcome, WriteOutcome::conflict) << "a finished run's key is still remembered";
  EXPECT_EQ(retry->earlier, first->run);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs WHERE idempotency_key = 'key-1'"), "1");

  {
    // A day later: the finish moved back (past the write guard, which
    // accepts only the fenced statements' writes).
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("SET session_replication_role = replica");
    tx.exec("UPDATE job_runs SET finished_at = finished_at - interval '24 hours 1 minute' WHERE id = " +
            std::to_string(first->run.value));
  }
  auto later = admin.trigger(Actor{"tester", epoch}, "free", std::string("key-1"), std::nullopt);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->outcome, WriteOutcome::applied) << "a day after its run finished, the key is free again";
  EXPECT_NE(later->run, first->run);
  auto other = admin.trigger(Actor{"tester", epoch}, "free", std::string("key-2"), std::nullopt);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->outcome, WriteOutcome::applied);
  EXPECT_EQ(other->earlier, std::nullopt);
}

// Every statement that moves a run out of ASSIGNED or RUNNING gives its
// number back (schemas/0020: the statements release the holds, a CHECK
// refuses a row that keeps them): after each way out, the one number of a
// job limited to 1 can be taken again.
TEST_F(OverlapStoreTest, EveryWayOutOfAnActiveStateGivesTheNumberBack) {
  job("single", 1);
  auto hold = [&](RunId id) -> WriteResult {
    auto a = assign(id, 1);
    EXPECT_TRUE(applied(a, id)) << "run " << id.value << ": the number is free";
    return a && a->applied.count(id.value) ? a->applied.at(id.value) : WriteResult{};
  };
  auto written = [](const Result<WriteResult>& r) -> std::string {
    return !r ? r.error().message : r->outcome == WriteOutcome::applied ? "applied" : "not applied";
  };
  auto batch_written = [](const Result<BatchWriteResult>& r) -> std::string {
    return !r ? r.error().message : std::to_string(r->applied.size()) + " applied";
  };
  auto held_numbers = [&] { return text("SELECT count(*) FROM job_runs WHERE instance_no IS NOT NULL"); };
  auto start = [&](RunId id, const WriteResult& a) -> WriteResult {
    auto s = runs.start_batch(epoch, {{id, a.new_version, {"w1", a.attempt, a.lease_token}, "i1"}}, Millis{5000});
    EXPECT_TRUE(s && s->applied.count(id.value) == 1);
    return s && s->applied.count(id.value) ? s->applied.at(id.value) : WriteResult{};
  };

  const RunId finished = run_of("single");
  auto a = hold(finished);
  auto s = start(finished, a);
  FinishRow fin{finished, s.new_version, {"w1", a.attempt, a.lease_token}, {}, std::nullopt};
  ASSERT_EQ(batch_written(runs.finish_batch(epoch, {fin})), "1 applied");
  EXPECT_EQ(held_numbers(), "0") << "finished (batch)";

  const RunId retried = run_of("single");
  a = hold(retried);
  s = start(retried, a);
  FinishRow retry{retried, s.new_version, {"w1", a.attempt, a.lease_token}, {}, Millis{60000}};
  retry.finish.final_state = RunState::failed;
  ASSERT_EQ(batch_written(runs.finish_batch(epoch, {retry})), "1 applied");
  EXPECT_EQ(held_numbers(), "0") << "retry waiting (batch)";

  const RunId finished_alone = run_of("single");
  a = hold(finished_alone);
  s = start(finished_alone, a);
  ASSERT_EQ(written(runs.finish({finished_alone, s.new_version, epoch}, {"w1", a.attempt, a.lease_token}, Finish{})),
            "applied");
  EXPECT_EQ(held_numbers(), "0") << "finished (one run)";

  const RunId orphaned = run_of("single");
  a = hold(orphaned);
  ASSERT_EQ(written(runs.orphan({orphaned, a.new_version, epoch})), "applied");
  EXPECT_EQ(held_numbers(), "0") << "orphaned";

  const RunId requeued = run_of("single");
  a = hold(requeued);
  ASSERT_EQ(written(runs.requeue({requeued, a.new_version, epoch})), "applied");
  EXPECT_EQ(held_numbers(), "0") << "requeued";

  const RunId last = run_of("single");
  EXPECT_TRUE(applied(assign(last, 1), last));
}

// What the database refuses itself, whatever a writer does (test
// scaffolding writes the rows raw here, as a buggy writer would): a run
// that is not active keeps no number, and an active run's number does not
// change under it.
TEST_F(OverlapStoreTest, TheDatabaseRefusesHoldsOutsideAnActiveStateAndChangedHolds) {
  job("limited", 2);
  const RunId id = run_of("limited");
  auto a = assign(id, 1);
  ASSERT_TRUE(applied(a, id));
  const auto version = a->applied.at(id.value).new_version.value;
  auto refused = [&](const std::string& set, const std::string& state = "state") -> std::string {
    try {
      pqxx::connection c(url);
      pqxx::work tx(c);
      tx.exec("UPDATE job_runs SET " + set + ", " + history_set(state, std::to_string(epoch.value)) +
              ", version = version + 1, leader_epoch = " + std::to_string(epoch.value) +
              " WHERE id = " + std::to_string(id.value) + " AND version = " + std::to_string(version));
      tx.commit();
      return "";
    } catch (const pqxx::sql_error& e) {
      return e.what();
    }
  };
  const auto kept = refused("state = 'ORPHANED'", "'ORPHANED'");
  EXPECT_NE(kept.find("job_runs_holds_only_while_active"), std::string::npos) << kept;
  const auto changed = refused("instance_no = 2");
  EXPECT_NE(changed.find("must keep its instance number, exclusive lock, gate and key slot while ASSIGNED or RUNNING "
                         "(ASSIGNED -> ASSIGNED)"),
            std::string::npos)
      << changed;
  EXPECT_EQ(refused("state = 'ORPHANED', instance_no = NULL", "'ORPHANED'"), "") << "the holds released with the state";
  EXPECT_EQ(text("SELECT state || ' ' || coalesce(instance_no::text, '-') FROM job_runs WHERE id = " +
                 std::to_string(id.value)),
            "ORPHANED -");
}

// A run's update takes no row lock before it writes (schemas/0020): a
// BEFORE UPDATE row trigger on job_runs would make PostgreSQL lock the old
// row first (a heap LOCK record in the WAL for each of a run's updates,
// WHEN conditions or not). The attempt row's foreign key took the one lock
// left in a run's cycle, on the finish, until the attempt that ends a run
// was recorded in the run's own row (schemas/0022): none is left.
TEST_F(OverlapStoreTest, ARunsCycleTakesNoRowLock) {
  job("free", std::nullopt);
  const RunId id = run_of("free");
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
  }
  const auto from = text("SELECT pg_current_wal_lsn()");
  auto a = runs.assign_batch(epoch, {{id, Version{1}, RunState::pending, "w1"}});
  ASSERT_TRUE(applied(a, id));
  const auto& w = a->applied.at(id.value);
  auto s = runs.start_batch(epoch, {{id, w.new_version, {"w1", w.attempt, w.lease_token}, "i1"}}, Millis{5000});
  ASSERT_TRUE(s && s->applied.count(id.value) == 1);
  FinishRow fin{id, s->applied.at(id.value).new_version, {"w1", w.attempt, w.lease_token}, {}, std::nullopt};
  auto f = runs.finish_batch(epoch, {fin});
  ASSERT_TRUE(f && f->applied.size() == 1u) << (f ? "not applied" : f.error().message);
  const auto locks =
      text("SELECT count(*) FROM pg_get_wal_records_info('" + from +
           "', pg_current_wal_lsn()) WHERE resource_manager = 'Heap' AND record_type = 'LOCK'"
           " AND block_ref LIKE '% rel %/' || (SELECT oid FROM pg_database WHERE datname = current_database()) || '/'"
           " || pg_relation_filenode('job_runs') || ' %'");
  EXPECT_EQ(locks, "0") << "row locks on job_runs in assign, start and finish";
}

// The runs no attached worker can take (the dispatcher reports them as
// unmatched): only waiting runs of jobs whose selector no label set
// satisfies, in run order, at most the limit; none when every job fits.
TEST_F(OverlapStoreTest, UnmatchedRunsAreTheWaitingRunsOfJobsNoLabelSetSatisfies) {
  auto with_selector = [&](const std::string& name, const std::string& selector) {
    JobDefinition j;
    j.name = name;
    j.selector_json = selector;
    ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  };
  with_selector("any", "{}");
  with_selector("gpu", R"({"gpu": "yes"})");
  with_selector("zone-a", R"({"zone": "a"})");
  const RunId any = run_of("any"), gpu1 = run_of("gpu"), zone = run_of("zone-a"), gpu2 = run_of("gpu"),
              gpu3 = run_of("gpu");
  (void)any;
  (void)zone;
  ASSERT_TRUE(applied(assign(gpu3, std::nullopt), gpu3));  // assigned: not waiting
  const std::vector<std::map<std::string, std::string>> zone_a{{{"zone", "a"}, {"os", "linux"}}};
  auto unmatched = leader.unmatched_runs(zone_a, 10);
  ASSERT_TRUE(unmatched) << unmatched.error().message;
  ASSERT_EQ(unmatched->size(), 2u);
  EXPECT_EQ((*unmatched)[0].id, gpu1);
  EXPECT_EQ((*unmatched)[1].id, gpu2);
  EXPECT_EQ((*unmatched)[0].job_name, "gpu");
  auto limited = leader.unmatched_runs(zone_a, 1);
  ASSERT_TRUE(limited);
  ASSERT_EQ(limited->size(), 1u);
  EXPECT_EQ((*limited)[0].id, gpu1);
  // No worker attached: every job with a selector is unmatched.
  auto none = leader.unmatched_runs({}, 10);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->size(), 3u);
  // Every job fits some worker: nothing.
  const std::vector<std::map<std::string, std::string>> both{{{"zone", "a"}}, {{"gpu", "yes"}}};
  auto fits = leader.unmatched_runs(both, 10);
  ASSERT_TRUE(fits);
  EXPECT_TRUE(fits->empty());
}

// A job's parameter declarations judge a trigger in the statement that
// would insert its run (schemas/0027): an undeclared name, a value of the
// wrong type, outside the enum or the pattern, a missing required one, an
// admin-only one from a lesser token -- each refused with its reason and
// no run; what fits is inserted.
TEST_F(OverlapStoreTest, ParameterDeclarationsRefuseATriggerInItsOwnStatement) {
  JobDefinition j;
  j.name = "deploy";
  j.parameters_json = R"({"region": "eu"})";
  j.parameter_rules_json = R"({"region": {"enum": ["eu", "us"]}, "count": {"type": "integer"},
    "tag": {"pattern": "[a-z0-9-]{1,8}"}, "ticket": {"required": true}, "force": {"type": "boolean",
    "operate": false}})";
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  auto trigger = [&](const std::string& params, bool admin_token = false) {
    return admin.trigger(Actor{"tester", epoch, admin_token}, "deploy", std::nullopt,
                         std::string(R"({"parameters":)") + params + "}");
  };
  auto refused = [&](const std::string& params, bool admin_token = false) -> std::string {
    auto t = trigger(params, admin_token);
    if (!t) return "error: " + t.error().message;
    if (t->outcome == WriteOutcome::applied) return "inserted";
    return t->parameters_refused.value_or("not refused");
  };
  const auto runs_before = text("SELECT count(*) FROM job_runs");
  EXPECT_EQ(refused(R"({"ticket": "T-1", "x": "1"})"),
            "parameter 'x' is not declared by the job (it declares: 'count', 'force', 'region', 'tag', 'ticket')");
  EXPECT_EQ(refused(R"({"ticket": "T-1", "count": "3; rm -rf /"})"),
            "parameter 'count' must be an integer, got '3; rm -rf /'");
  EXPECT_EQ(refused(R"({"ticket": "T-1", "region": "ap"})"), "parameter 'region' must be one of 'eu', 'us', got 'ap'");
  EXPECT_EQ(refused(R"({"ticket": "T-1", "tag": "abcdefghij"})"),
            "parameter 'tag' must match the pattern '[a-z0-9-]{1,8}', got 'abcdefghij'")
      << "the whole value must match, not a part of it";
  EXPECT_EQ(refused(R"({"ticket": "T-1", "tag": "ok; touch pwned"})"),
            "parameter 'tag' must match the pattern '[a-z0-9-]{1,8}', got 'ok; touch pwned'");
  EXPECT_EQ(refused(R"({"region": "us"})"), "parameter 'ticket' is required");
  EXPECT_EQ(refused(R"({"ticket": "T-1", "force": true})"),
            "parameter 'force' may be set by an admin token only (operate: false)");
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), runs_before) << "nothing refused was inserted";
  EXPECT_EQ(refused(R"({"ticket": "T-1", "force": true, "count": 3, "tag": "v1-2"})", true), "inserted");
  EXPECT_EQ(refused(R"({"ticket": "T-1", "region": "us"})"), "inserted");
  // A pattern PostgreSQL cannot compile is refused when the job is written.
  JobDefinition bad = j;
  bad.name = "bad-pattern";
  bad.parameter_rules_json = R"({"v": {"pattern": "(unclosed"}})";
  auto created = admin.create_job(Actor{"test", epoch}, bad);
  ASSERT_FALSE(created);
  EXPECT_NE(created.error().message.find("parameters.v.pattern"), std::string::npos) << created.error().message;
  // And one that compiles only inside the anchors it is matched with: its
  // parenthesis closes the anchors' group, and it would match anything
  // (security review N-L8).
  bad.parameter_rules_json = R"({"v": {"pattern": "[a-z]+)|(.*"}})";
  auto escaping = admin.create_job(Actor{"test", epoch}, bad);
  ASSERT_FALSE(escaping) << "a pattern that escapes its anchors";
  EXPECT_NE(escaping.error().message.find("parameters.v.pattern: invalid regular expression"), std::string::npos)
      << escaping.error().message;
  // So is a default its own pattern refuses (the runs that take it would
  // carry a value no trigger could give).
  bad.parameters_json = R"({"v": "UPPER"})";
  bad.parameter_rules_json = R"({"v": {"pattern": "[a-z]+"}})";
  auto wrong_default = admin.create_job(Actor{"test", epoch}, bad);
  ASSERT_FALSE(wrong_default);
  EXPECT_EQ(wrong_default.error().message, "parameters.v.default: 'UPPER' does not match the pattern '[a-z]+'");
  bad.parameters_json = R"({"v": "lower"})";
  EXPECT_TRUE(admin.create_job(Actor{"test", epoch}, bad));
}

namespace {

/// The job's parameters overlaid by the run's payload in the database
/// (jsonb `||`), each value as text.
std::map<std::string, std::string> parameters_as_the_database_overlays_them(const std::string& json_text) {
  std::map<std::string, std::string> out;
  const auto v = boost::json::parse(json_text);
  if (v.is_object())
    for (const auto& kv : v.as_object())
      out[std::string(kv.key())] =
          kv.value().is_string() ? std::string(kv.value().as_string()) : boost::json::serialize(kv.value());
  return out;
}

}  // namespace

// The dispatcher's read gives each run its job as the job is now: a change
// made by any writer, even one that does not bump the job's version column,
// is in the next read (a copy of the job's columns kept by the leader was
// measured and not kept: docs/performance.md, "The job's columns once per
// version"; this test is what such a copy must pass); and every payload's
// parameters come out as the database's own overlay makes them, on the
// trigger's path and the dispatcher's alike.
TEST_F(OverlapStoreTest, TheDueReadSeesEveryChangeOfAJobAndOverlaysPayloadsAsTheDatabaseDoes) {
  JobDefinition j;
  j.name = "shaped";
  j.parameters_json = R"({"region": "eu", "n": 1, "flag": true})";
  j.parameter_rules_json = R"({"region": {}, "n": {}, "flag": {}, "z": {}, "s": {}})";
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  const std::vector<std::string> payloads = {
      R"({"parameters": {"region": "us"}, "event": {"k": [1, 2.5, null]}})",
      R"({"upstream_run": 7, "region": "ap"})",
      R"({"parameters": {"n": 2.5, "flag": false, "z": null, "s": "x\"y"}})",
      R"({"parameters": {}})",
  };
  for (const auto& p : payloads) {
    auto t = admin.trigger(Actor{"test", epoch}, "shaped", std::nullopt, p);
    ASSERT_TRUE(t) << p << ": " << t.error().message;
    ASSERT_EQ(t->outcome, WriteOutcome::applied)
        << p << ": refused=" << t->parameters_refused.has_value() << " [" << t->parameters_refused.value_or("") << "]";
    ASSERT_TRUE(t->due.has_value());
    EXPECT_EQ(t->due->parameters,
              parameters_as_the_database_overlays_them(text(
                  "SELECT (j.parameters || coalesce(r.payload->'parameters', '{}') || (r.payload - 'parameters'))::text"
                  " FROM job_runs r JOIN job_definitions j ON j.id = r.job_definition_id WHERE r.id = " +
                  std::to_string(t->run.value))))
        << p;
  }
  // No payload at all: the job's defaults.
  ASSERT_TRUE(admin.trigger(Actor{"test", epoch}, "shaped", std::nullopt, std::nullopt));
  auto check_read = [&](const std::string& when) {
    auto read = leader.due_runs(10, {}, Millis{0}, {{}});
    ASSERT_TRUE(read) << when;
    ASSERT_EQ(read->size(), payloads.size() + 1) << when;
    for (const auto& d : *read) {
      EXPECT_EQ(d.job_name, "shaped") << when;
      EXPECT_EQ(d.tasks_json, text("SELECT tasks::text FROM job_definitions WHERE name = 'shaped'")) << when;
      EXPECT_EQ(d.timeout_ms,
                std::stoll(text("SELECT coalesce(timeout_ms, 0) FROM job_definitions WHERE name = 'shaped'")))
          << when;
      EXPECT_EQ(
          d.parameters,
          parameters_as_the_database_overlays_them(text(
              "SELECT (j.parameters || coalesce(r.payload->'parameters', '{}') || (r.payload - 'parameters'))::text"
              " FROM job_runs r JOIN job_definitions j ON j.id = r.job_definition_id WHERE r.id = " +
              std::to_string(d.id.value))))
          << when << ", run " << d.id.value;
    }
  };
  check_read("first read");
  check_read("second read, the job's columns held");
  // A writer that changes the job without touching its version column.
  const auto version_before = text("SELECT version FROM job_definitions WHERE name = 'shaped'");
  text(
      "UPDATE job_definitions SET parameters = '{\"region\": \"sa\", \"extra\": 3}', timeout_ms = 4242,"
      " tasks = '[{\"name\": \"t2\", \"kind\": \"NOOP\"}]', worker_selector = '{\"pool\": \"gpu\"}'"
      " WHERE name = 'shaped' RETURNING 1");
  ASSERT_EQ(text("SELECT version FROM job_definitions WHERE name = 'shaped'"), version_before);
  EXPECT_TRUE(leader.due_runs(10, {}, Millis{0}, {{}})->empty()) << "the new selector is read: no run fits no labels";
  auto gpu = leader.due_runs(10, {{"pool", "gpu"}}, Millis{0}, {{{"pool", "gpu"}}});
  ASSERT_TRUE(gpu);
  ASSERT_EQ(gpu->size(), payloads.size() + 1);
  for (const auto& d : *gpu) {
    EXPECT_EQ(d.timeout_ms, 4242);
    EXPECT_EQ(d.selector, (std::map<std::string, std::string>{{"pool", "gpu"}}));
    EXPECT_EQ(d.tasks_json, text("SELECT tasks::text FROM job_definitions WHERE name = 'shaped'"));
    EXPECT_EQ(d.parameters.count("extra"), 1u) << "run " << d.id.value;
  }
}
