// The history checker in production against real PostgreSQL (schemas/0040,
// docs/assurance.md): a slice of the database's records read and judged by
// the chaos checker's invariants, a sweep recorded once (its findings told
// in the audit log and to webhooks), the cursor moved only from where the
// sweep started, and a duplicate success inserted with SQL found within
// one sweep.
#include <gtest/gtest.h>

#include <algorithm>

#include "baton/store_pg/pg_verify_store.h"
#include "baton/verify/slice_verdict.h"
#include "baton/verify/verify_tally.h"
#include "overlap_fixture.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class VerifyStoreTest : public OverlapStoreTest {
 protected:
  void SetUp() override { plain_jobs({"etl"}); }

  /// One sweep as the node takes it: a slice from the recorded cursor,
  /// judged, recorded.
  struct Swept {
    verify::SliceVerdict verdict;
    RecordedSlice slice;
    SweepRecorded recorded;
  };
  Swept sweep(Millis settle = Millis{0}) {
    auto from = verifier.verify_cursor();
    EXPECT_TRUE(from) << from.error().message;
    auto slice = verifier.recorded_slice(*from, settle, 1000, true);
    EXPECT_TRUE(slice) << slice.error().message;
    Swept s{verify::judge_slice(*slice, verify::CheckSettings{10'000, 60'000}), *slice, {}};
    SweepRecord record{"n1", epoch.value, *from, slice->next, slice->runs, 0, {}, {}, s.verdict.violations};
    for (const auto& i : s.verdict.report.invariants) record.by_invariant[i.name] = {i.examined, i.violations};
    auto r = verifier.record_sweep(record);
    EXPECT_TRUE(r) << r.error().message;
    s.recorded = r ? *r : SweepRecorded{};
    return s;
  }
  static std::int64_t examined(const Swept& s, const std::string& name) {
    for (const auto& i : s.verdict.report.invariants)
      if (i.name == name) return i.examined;
    return -1;
  }
  /// A second attempt recorded SUCCEEDED for a run that already succeeded:
  /// what a coordinator that ran it twice would leave (inserted with SQL).
  void second_success(RunId run) {
    age("INSERT INTO job_run_attempt_rows (run_id, attempt, worker_id, leader_epoch, lease_token, started_at,"
        " finished_at, outcome, exit_code) SELECT id, attempt + 1, 'w9', leader_epoch, gen_random_uuid(),"
        " finished_at + interval '1 millisecond', finished_at + interval '2 milliseconds', 'SUCCEEDED', 0"
        " FROM job_runs WHERE id = " +
        std::to_string(run.value));
  }

  PgVerifyStore verifier{url, "test-verify"};
};

TEST_F(VerifyStoreTest, ACleanHistoryVerifiesAndASecondSuccessInsertedWithSqlIsFoundInOneSweep) {
  end({run_of("etl"), run_of("etl"), run_of("etl")}, true);
  end(run_of("etl"), false);
  Swept first = sweep();
  EXPECT_EQ(first.slice.runs, 4);
  EXPECT_TRUE(first.verdict.report.ok()) << first.verdict.report.markdown();
  EXPECT_TRUE(first.recorded.recorded);
  EXPECT_TRUE(first.slice.commit_timestamps) << "the private cluster keeps commit timestamps";
  for (const char* name : {"one_successful_execution", "legal_transitions", "transition_history_continuous",
                           "attempts_and_tokens", "dead_letter_iff_failed", "no_overlapping_executions"})
    EXPECT_GT(examined(first, name), 0) << name;
  EXPECT_EQ(examined(first, "dead_letter_iff_failed"), 4);
  // The writes decoded from each run's history array are the rows of the
  // job_run_transitions view (schemas/0022), one for one.
  std::string decoded, viewed;
  for (const auto& t : first.slice.history.transitions)
    decoded += std::to_string(t.run) + ":" + (t.from.empty() ? "-" : t.from) + ">" + t.to + "@" +
               std::to_string(t.to_version) + "/" + (t.from_version ? std::to_string(*t.from_version) : "-") + "a" +
               std::to_string(t.attempt) + "e" + std::to_string(t.epoch) + t.continuation + ";";
  pqxx::connection conn(url);
  pqxx::nontransaction view(conn);
  for (const auto& r : view.exec(
           "SELECT run_id || ':' || coalesce(from_state, '-') || '>' || to_state || '@' || to_version || '/' ||"
           " coalesce(from_version::text, '-') || 'a' || attempt || 'e' || leader_epoch || continuation_state || ';'"
           " FROM job_run_transitions ORDER BY run_id, to_version"))
    viewed += r[0].as<std::string>();
  EXPECT_EQ(decoded, viewed);
  EXPECT_GE(first.slice.history.transitions.size(), 16u);
  EXPECT_EQ(text("SELECT runs_checked || '/' || sweeps FROM verify_cursor"), "4/1");

  // A webhook told of violations.
  age("INSERT INTO webhooks (name, url, events, secret, created_by) VALUES ('ops', 'https://127.0.0.1:9/x',"
      " ARRAY['invariant_violated'], 'a-secret-of-sixteen-chars', 'test')");
  const RunId twice = run_of("etl");
  end(twice, true);
  second_success(twice);
  Swept second = sweep();
  EXPECT_EQ(second.slice.runs, 1) << "only the run that finished since";
  ASSERT_EQ(second.verdict.violations.size(), 1u) << second.verdict.report.markdown();
  EXPECT_EQ(second.verdict.violations[0].invariant, "one_successful_execution");
  EXPECT_EQ(second.verdict.violations[0].runs, std::vector<std::int64_t>{twice.value});
  EXPECT_EQ(second.recorded.new_violations, 1);
  EXPECT_EQ(text("SELECT invariant || ' ' || run_ids::text || ' ' || found_by FROM invariant_violations"),
            "one_successful_execution {" + std::to_string(twice.value) + "} n1");
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE action = 'invariant.violated'"
                 " AND subject = 'invariant:one_successful_execution'"),
            "1");
  EXPECT_EQ(text("SELECT count(*) FROM webhook_deliveries WHERE kind = 'invariant_violated'"
                 " AND (body::jsonb -> 'data' ->> 'invariant') = 'one_successful_execution'"),
            "1");

  // Found again (`baton verify` over everything, or a context run): recorded once.
  SweepRecord again{"n2", epoch.value, *verifier.verify_cursor(), *verifier.verify_cursor(), 0, 0,
                    {},   {},          second.verdict.violations};
  auto r = verifier.record_sweep(again);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->recorded);
  EXPECT_EQ(r->new_violations, 0);
  EXPECT_EQ(text("SELECT count(*) FROM invariant_violations"), "1");

  // The API's view, then acknowledged (audited): the banner empties.
  auto status = admin.verify_status_json(10, true);
  ASSERT_TRUE(status);
  EXPECT_NE(status->find("\"violations_open\": 1"), std::string::npos) << *status;
  EXPECT_NE(status->find("\"one_successful_execution\": 1"), std::string::npos) << *status;
  auto acked = admin.acknowledge_violations(Actor{"alice", epoch}, 1000);
  ASSERT_TRUE(acked);
  EXPECT_EQ(*acked, 1);
  status = admin.verify_status_json(10, true);
  EXPECT_NE(status->find("\"violations_open\": 0"), std::string::npos) << *status;
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE action = 'invariant.acknowledged'"), "1");
}

TEST_F(VerifyStoreTest, ASweepMovesTheCursorOnlyFromWhereItStartedAndWaitsForTheSettleTime) {
  end(run_of("etl"), true);
  EXPECT_EQ(sweep(Millis{60'000}).slice.runs, 0) << "finished less than a minute ago";
  auto from = verifier.verify_cursor();
  ASSERT_TRUE(from);
  auto slice = verifier.recorded_slice(*from, Millis{0}, 10, true);
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->runs, 1);
  SweepRecord record{"n1", epoch.value, *from, slice->next, slice->runs, 0, {}, {}, {}};
  auto first = verifier.record_sweep(record);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->recorded);
  // Another node that read the same slice from the same cursor: refused.
  auto second = verifier.record_sweep(record);
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->recorded);
  EXPECT_EQ(text("SELECT runs_checked FROM verify_cursor"), "1");
  EXPECT_EQ(sweep().slice.runs, 0) << "nothing new after the cursor";
}

TEST_F(VerifyStoreTest, ARunRunningOnAWorkerGoneLongAgoIsFoundAndADuplicateOfAnOldRunByAFullPass) {
  const RunId old = run_of("etl");
  end(old, true);
  EXPECT_TRUE(sweep().verdict.report.ok());
  // A run RUNNING on w1, which detached ten minutes ago and was never
  // given up (the leader's part, bypassed here).
  const RunId stuck = run_of("etl");
  auto a = assign(stuck, std::nullopt);
  ASSERT_TRUE(applied(a, stuck));
  const WriteResult& w = a->applied.at(stuck.value);
  ASSERT_TRUE(runs.start_batch(epoch, {{stuck, w.new_version, {"w1", w.attempt, w.lease_token}, "i1"}}, Millis{5000}));
  age("INSERT INTO workers (worker_id, state, detached_at) VALUES ('w1', 'DETACHED', now() - interval '10 minutes')"
      " ON CONFLICT (worker_id) DO UPDATE SET state = 'DETACHED', detached_at = now() - interval '10 minutes'");
  Swept s = sweep();
  ASSERT_EQ(s.verdict.violations.size(), 1u) << s.verdict.report.markdown();
  EXPECT_EQ(s.verdict.violations[0].invariant, "running_has_owner");
  EXPECT_NE(
      s.verdict.violations[0].evidence.find("run " + std::to_string(stuck.value) + " (etl) attempt 1 is RUNNING on w1"),
      std::string::npos)
      << s.verdict.violations[0].evidence;
  EXPECT_EQ(sweep().recorded.new_violations, 0) << "found again, recorded once";
  // A run ASSIGNED to the same gone worker, never started nor taken back.
  const RunId unstarted = run_of("etl");
  ASSERT_TRUE(applied(assign(unstarted, std::nullopt), unstarted));
  s = sweep();
  EXPECT_EQ(s.recorded.new_violations, 1) << s.verdict.report.markdown();
  const auto found = std::find_if(s.verdict.violations.begin(), s.verdict.violations.end(),
                                  [](const auto& v) { return v.invariant == "assigned_has_owner"; });
  ASSERT_NE(found, s.verdict.violations.end()) << s.verdict.report.markdown();
  EXPECT_NE(found->evidence.find("run " + std::to_string(unstarted.value) + " (etl) attempt 1 is ASSIGNED to w1"),
            std::string::npos)
      << found->evidence;
  EXPECT_EQ(found->runs, std::vector<std::int64_t>{unstarted.value});

  // A duplicate success of a run the sweep passed long ago: the next
  // sweeps do not read it again, a pass over everything (`baton verify`) does.
  second_success(old);
  verify::VerifyTally all;
  VerifyCursor at{};
  for (bool first = true;; first = false) {
    auto slice = verifier.recorded_slice(at, Millis{0}, 1, first);
    ASSERT_TRUE(slice);
    if (slice->runs == 0) break;
    all.add(verify::judge_slice(*slice, verify::CheckSettings{10'000, 60'000}), slice->runs);
    at = slice->next;
  }
  EXPECT_EQ(all.runs, 1) << "the stuck run has not finished";
  EXPECT_EQ(all.by_invariant.at("one_successful_execution").second, 1) << all.text();
  EXPECT_NE(
      all.text().find("run " + std::to_string(old.value) + ": run " + std::to_string(old.value) + " attempt 2 on w9"),
      std::string::npos)
      << all.text();
}

// Seen in a 10-minute chaos run (seed 58): an attempt given up (RUNNING ->
// RETRY_WAITING, its instance released), the next run of its job started,
// then the given-up attempt's late success. The late success's run ends in
// an earlier slice than the next run's, so when the next run is judged the
// given-up one is context: read with its writes, it ran until it was given
// up, not until its late report, and the two did not overlap.
TEST_F(VerifyStoreTest, AContextRunGivenUpAndLateReportedRunsUntilItWasGivenUp) {
  job("solo", 1);
  const RunId given_up = run_of("solo");
  const RunId next = run_of("solo");
  auto started = [&](RunId id) {
    auto a = assign(id, 1);
    EXPECT_TRUE(applied(a, id));
    const WriteResult& w = a->applied.at(id.value);
    const AttemptFence att{"w1", w.attempt, w.lease_token};
    auto s = runs.start_batch(epoch, {{id, w.new_version, att, "i1"}}, Millis{5000});
    EXPECT_TRUE(s && s->applied.count(id.value) == 1);
    return std::make_pair(s->applied.at(id.value).new_version, att);
  };
  auto [v1, att1] = started(given_up);
  auto lost = runs.retry_later({given_up, v1, epoch}, att1, Finish{RunState::failed, {}, "attempt_lost", "", "{}"},
                               Millis{60'000});
  ASSERT_TRUE(lost && lost->outcome == WriteOutcome::applied);
  auto [v2, att2] = started(next);
  auto late = runs.late_success({given_up, lost->new_version, epoch}, att1, Finish{});
  ASSERT_TRUE(late && late->outcome == WriteOutcome::applied) << "the late success replaced the retry";
  EXPECT_EQ(sweep().slice.runs, 1) << "the late success ended its run";

  auto fin = runs.finish({next, v2, epoch}, att2, Finish{});
  ASSERT_TRUE(fin && fin->outcome == WriteOutcome::applied);
  Swept s = sweep();
  EXPECT_EQ(s.slice.runs, 1);
  ASSERT_TRUE(s.slice.history.context_runs.count(given_up.value)) << "it ended while the next run ran";
  EXPECT_FALSE(s.slice.history.context_transitions.empty()) << "read with its writes";
  EXPECT_GT(examined(s, "overlap_respected"), 0);
  EXPECT_TRUE(s.verdict.report.ok()) << s.verdict.report.markdown();
}

}  // namespace

namespace {

// What the checker's running_has_owner found in its first chaos run in CI:
// an old leader's session with a worker closed after the worker had
// attached to the new leader, and its detach overwrote the new attachment
// (the row said DETACHED while the worker ran the new leader's runs). A
// detach now changes only the attachment it ends.
TEST_F(VerifyStoreTest, AnOldLeadersLateDetachLeavesAWorkerAttachedToTheNewLeader) {
  ASSERT_TRUE(leader.worker_attached("w5", "{}", 2, "n1", Epoch{epoch.value}));
  ASSERT_TRUE(leader.worker_attached("w5", "{}", 2, "n2", Epoch{epoch.value + 1}));
  ASSERT_TRUE(leader.worker_detached("w5", "n1", Epoch{epoch.value}));
  EXPECT_EQ(text("SELECT state || ' ' || attached_node_id FROM workers WHERE worker_id = 'w5'"), "ATTACHED n2");
  ASSERT_TRUE(leader.worker_detached("w5", "n2", Epoch{epoch.value + 1}));
  EXPECT_EQ(text("SELECT state FROM workers WHERE worker_id = 'w5'"), "DETACHED");
}

}  // namespace
