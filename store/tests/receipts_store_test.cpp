// Tamper-evident receipts against real PostgreSQL (schemas/0042,
// docs/assurance.md "Receipts"): every end a fenced statement writes
// extends its connection's chain in that statement, every audit entry its
// own chain, the next election checkpoints the epoch, and
// `baton verify --receipts` (PgVerifyStore::check_receipts) names the link
// at which an edited, deleted, reordered or inserted row shows.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "receipts_fixture.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

TEST_F(ReceiptsStoreTest, EveryEndExtendsItsConnectionsChainAndAnUntouchedHistoryHolds) {
  history();
  ReceiptsReport r = check();
  EXPECT_EQ(r.problems_total, 0) << listed(r);
  // One link per statement on the run store's own chain, seq 1..4, each
  // following the one before.
  EXPECT_EQ(text("SELECT string_agg(seq::text || ':' || cardinality(ends), ',' ORDER BY seq)"
                 " FROM receipt_links WHERE lane LIKE 'test-runs/%'"),
            "1:2,2:1,3:1,4:1");
  EXPECT_EQ(text("SELECT count(*) FROM receipt_links l JOIN receipt_links p ON p.epoch = l.epoch AND p.lane = l.lane"
                 " AND p.seq = l.seq - 1 WHERE l.prev = p.hash"),
            "3");
  // What an end records: the run, its attempt, its end, its worker and that
  // worker's process, its exit code, its epoch and its output's digest.
  EXPECT_EQ(text("SELECT e FROM receipt_links l, unnest(l.ends) e WHERE split_part(e, ' ', 2)::bigint = " +
                 std::to_string(a.value)),
            "run " + std::to_string(a.value) + " 1 'SUCCEEDED' 'SUCCEEDED' 'w1' 'i1' NULL " +
                std::to_string(epoch.value) + " " + text("SELECT md5('null')"));
  // The retried attempt is an 'attempt' end; the audit entries have their
  // own chains (the admin store's, the election's).
  EXPECT_EQ(text("SELECT count(*) FROM receipt_links l, unnest(l.ends) e WHERE split_part(e, ' ', 1) = 'attempt'"),
            "1");
  EXPECT_GT(r.audit_entries, 0);
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE receipt_hash IS NULL"), "0");
}

TEST_F(ReceiptsStoreTest, AnEditedRunIsNamedAtTheLinkThatRecordsIt) {
  history();
  age("UPDATE job_runs SET exit_code = 0, outcome = 'SUCCEEDED', state = 'SUCCEEDED' WHERE id = " +
      std::to_string(c.value));
  ReceiptsReport r = check();
  ASSERT_EQ(r.problems_total, 1) << listed(r);
  EXPECT_EQ(r.problems[0].seq, link_of(c));
  EXPECT_EQ(r.problems[0].lane, lane());
  EXPECT_NE(r.problems[0].problem.find("run " + std::to_string(c.value) + " attempt 1 reads"), std::string::npos)
      << listed(r);
}

TEST_F(ReceiptsStoreTest, AnEditedAttemptAndAnEditedAuditEntryAreNamed) {
  history();
  age("UPDATE job_run_attempt_rows SET outcome = 'SUCCEEDED' WHERE run_id = " + std::to_string(d.value));
  age("UPDATE audit_log SET actor = 'someone-else' WHERE id = (SELECT min(id) FROM audit_log WHERE action ="
      " 'job.trigger')");
  ReceiptsReport r = check();
  ASSERT_EQ(r.problems_total, 2) << listed(r);
  // In chain order: the run ends' chains, then the audit log's.
  EXPECT_EQ(r.problems[0].kind, "runs");
  EXPECT_NE(r.problems[0].problem.find("attempt " + std::to_string(d.value) + " attempt 1 reads"), std::string::npos)
      << listed(r);
  EXPECT_EQ(r.problems[1].kind, "audit");
  EXPECT_NE(r.problems[1].problem.find("is not what its receipt says"), std::string::npos) << listed(r);
}

TEST_F(ReceiptsStoreTest, ADeletedLinkIsNamedAtTheLinkAfterItAndAtTheChainsHead) {
  history();
  age("DELETE FROM receipt_links WHERE lane = '" + lane() + "' AND seq IN (2, 4)");
  ReceiptsReport r = check();
  ASSERT_GE(r.problems_total, 2) << listed(r);
  EXPECT_EQ(r.problems[0].seq, 3);
  EXPECT_NE(r.problems[0].problem.find("links 2 to 2 are missing"), std::string::npos) << listed(r);
  bool head = false;
  for (const auto& p : r.problems)
    head = head || p.problem.find("the chain's head is link 4 but the chain ends at link 3") != std::string::npos;
  EXPECT_TRUE(head) << listed(r);
}

TEST_F(ReceiptsStoreTest, ReorderedOrReplacedLinksAreNamed) {
  history();
  const std::string l = "lane = '" + lane() + "'";
  // Two links' records swapped: each hash no longer that of its content.
  age("UPDATE receipt_links x SET ends = y.ends FROM receipt_links y WHERE x." + l + " AND y." + l +
      " AND ((x.seq = 2 AND y.seq = 3) OR (x.seq = 3 AND y.seq = 2))");
  ReceiptsReport r = check();
  ASSERT_GE(r.problems_total, 1) << listed(r);
  EXPECT_EQ(r.problems[0].seq, 2);
  EXPECT_NE(r.problems[0].problem.find("its hash is not that of what it records"), std::string::npos) << listed(r);
}

TEST_F(ReceiptsStoreTest, LinksRenumberedOutOfOrderAreNamed) {
  history();
  const std::string l = "lane = '" + lane() + "'";
  // Links 2 and 3 trade places, each with its own hash: link 2 no longer
  // follows link 1.
  age("UPDATE receipt_links SET seq = 1000 WHERE " + l + " AND seq = 2");
  age("UPDATE receipt_links SET seq = 2 WHERE " + l + " AND seq = 3");
  age("UPDATE receipt_links SET seq = 3 WHERE " + l + " AND seq = 1000");
  ReceiptsReport r = check();
  ASSERT_GE(r.problems_total, 1) << listed(r);
  EXPECT_EQ(r.problems[0].seq, 2);
  EXPECT_NE(r.problems[0].problem.find("does not follow link 1"), std::string::npos) << listed(r);
}

TEST_F(ReceiptsStoreTest, ADeletedRunIsNamedAndARunInsertedWithSqlHasNoReceipt) {
  history();
  age("DELETE FROM job_runs WHERE id = " + std::to_string(a.value));
  age("INSERT INTO job_runs (leader_epoch, max_attempts, state, outcome, attempt, assigned_worker_id,"
      " started_at, finished_at) VALUES (" +
      std::to_string(epoch.value) + ", 1, 'SUCCEEDED', 'SUCCEEDED', 1, 'w1', now(), now())");
  const std::string forged = text("SELECT max(id) FROM job_runs");
  ReceiptsReport r = check();
  std::string all = listed(r);
  EXPECT_EQ(r.problems_total, 2) << all;
  EXPECT_NE(all.find("run " + std::to_string(a.value) + " attempt 1 is gone"), std::string::npos) << all;
  EXPECT_NE(all.find("run " + forged + " ended SUCCEEDED with no receipt"), std::string::npos) << all;
}

TEST_F(ReceiptsStoreTest, TheNextElectionCheckpointsTheEpochAndAChainCutAtItsEndIsNamed) {
  history();
  const std::string chain = lane();
  Epoch next = force_election(url, "n2");
  ASSERT_GT(next.value, epoch.value);
  EXPECT_EQ(text("SELECT receipts -> 'runs' -> '" + chain +
                 "' ->> 0 FROM epoch_history WHERE epoch = " + std::to_string(epoch.value)),
            "4");
  EXPECT_EQ(check().problems_total, 0) << listed(check());
  // The last link and the head rewritten to match: the checkpoint still
  // says where the chain ended.
  age("DELETE FROM receipt_links WHERE lane = '" + chain + "' AND seq = 4");
  age("UPDATE receipt_heads h SET seq = 3, hash = l.hash FROM receipt_links l WHERE h.kind = 'runs' AND h.lane = '" +
      chain + "' AND l.lane = h.lane AND l.epoch = h.epoch AND l.seq = 3");
  ReceiptsReport r = check();
  std::string all = listed(r);
  EXPECT_NE(all.find("the checkpoint of epoch " + std::to_string(epoch.value) +
                     " says the chain ends at link 4, but it ends at link 3"),
            std::string::npos)
      << all;
}

TEST_F(ReceiptsStoreTest, ACheckpointRemovedIsNamedAndNoLaterElectionWritesItAgain) {
  history();
  const std::string e = std::to_string(epoch.value);
  force_election(url, "n2");
  ASSERT_NE(text("SELECT receipts IS NOT NULL FROM epoch_history WHERE epoch = " + e), "f");
  age("UPDATE epoch_history SET receipts = NULL WHERE epoch = " + e);
  ReceiptsReport r = check();
  std::string all = listed(r);
  EXPECT_NE(all.find("epoch " + e + " has no checkpoint, though epoch " + std::to_string(epoch.value + 1) +
                     " was elected after receipts began"),
            std::string::npos)
      << all;
  // The next election checkpoints the epoch it ends, not the one whose
  // checkpoint was taken away (from heads that may have been rewritten
  // meanwhile): the gap stays named.
  force_election(url, "n3");
  EXPECT_EQ(text("SELECT receipts IS NULL FROM epoch_history WHERE epoch = " + e), "t");
  EXPECT_EQ(text("SELECT receipts IS NOT NULL FROM epoch_history WHERE epoch = " + std::to_string(epoch.value + 1)),
            "t");
  all = listed(check());
  EXPECT_NE(all.find("epoch " + e + " has no checkpoint"), std::string::npos) << all;
}

TEST_F(ReceiptsStoreTest, EndsDatedBeforeReceiptsBeganAreAskedForOneByTheirIds) {
  history();
  // A finished run inserted with SQL, ended `outcome` at attempt
  // `attempt`, started and ended the given intervals before receipts
  // began: its id.
  auto forge = [&](const std::string& outcome, int attempt, const std::string& started, const std::string& ended) {
    age("INSERT INTO job_runs (leader_epoch, max_attempts, state, outcome, attempt, assigned_worker_id, created_at,"
        " started_at, finished_at) SELECT " +
        std::to_string(epoch.value) + ", 2, '" + outcome + "', '" + outcome + "', " + std::to_string(attempt) +
        ", 'w1', at - interval '" + started + "', at - interval '" + started + "', at - interval '" + ended +
        "' FROM receipts_began");
    return text("SELECT max(id) FROM job_runs");
  };
  // A run and a failed attempt of it, dated an hour before receipts began:
  // their dates say they need none.
  const std::string forged = forge("SUCCEEDED", 2, "2 hours", "1 hour");
  // One dated past retention's horizon too: its receipt could have been
  // pruned, but not a run created after receipts began.
  const std::string old = forge("FAILED", 1, "41 days", "40 days");
  age("INSERT INTO job_run_attempt_rows (run_id, attempt, worker_id, leader_epoch, started_at, finished_at, outcome)"
      " SELECT " +
      forged + ", 1, 'w1', " + std::to_string(epoch.value) +
      ", at - interval '2 hours', at - interval '90 minutes', 'FAILED' FROM receipts_began");
  ReceiptsReport r = check();
  std::string all = listed(r);
  EXPECT_EQ(r.problems_total, 3) << all;
  EXPECT_NE(all.find("run " + forged + " ended SUCCEEDED with no receipt, dated before receipts began"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("run " + old + " ended FAILED with no receipt, dated before receipts began"), std::string::npos)
      << all;
  EXPECT_NE(all.find("attempt 1 of run " + forged + " ended FAILED with no receipt, dated before receipts began"),
            std::string::npos)
      << all;
}

TEST_F(ReceiptsStoreTest, AnAuditEntryWrittenWithItsTriggerDisabledIsNamed) {
  history();
  // age() writes as a replica would: the receipt trigger does not fire.
  age("INSERT INTO audit_log (actor, action, subject) VALUES ('someone', 'job.delete', 'etl')");
  const std::string forged = text("SELECT max(id) FROM audit_log");
  ASSERT_EQ(text("SELECT receipt_lane IS NULL FROM audit_log WHERE id = " + forged), "t");
  ReceiptsReport r = check();
  std::string all = listed(r);
  ASSERT_EQ(r.problems_total, 1) << all;
  EXPECT_EQ(r.problems[0].kind, "audit");
  EXPECT_NE(all.find("audit entry " + forged + " (job.delete) has no receipt"), std::string::npos) << all;
}

TEST_F(ReceiptsStoreTest, RetentionCutsChainsAtAnAnchorAndTheRestStillHolds) {
  history();
  // Everything older than the horizon: the runs and their links go, each
  // chain's cut is remembered.
  age("UPDATE job_runs SET finished_at = finished_at - interval '40 days' WHERE id IN (" + std::to_string(a.value) +
      ", " + std::to_string(b.value) + ")");
  age("UPDATE receipt_links SET created_at = created_at - interval '40 days' WHERE lane = '" + lane() +
      "' AND seq = 1");
  auto p = leader.prune(epoch, 100);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->runs, 2);
  EXPECT_EQ(text("SELECT seq FROM receipt_anchors WHERE lane = '" + lane() + "'"), "1");
  EXPECT_EQ(text("SELECT min(seq) FROM receipt_links WHERE lane = '" + lane() + "'"), "2");
  ReceiptsReport r = check();
  EXPECT_EQ(r.problems_total, 0) << listed(r);
  // A link deleted right after the cut is still seen.
  age("DELETE FROM receipt_links WHERE lane = '" + lane() + "' AND seq = 2");
  r = check();
  ASSERT_GE(r.problems_total, 1) << listed(r);
  EXPECT_NE(r.problems[0].problem.find("links 2 to 2 are missing (retention kept from link 2)"), std::string::npos)
      << listed(r);
}

}  // namespace

namespace {

/// Holds an ACCESS EXCLUSIVE lock on receipt_links for `hold` on a
/// connection of its own, so that a pass reading it waits that long.
class ReceiptsLocked {
 public:
  ReceiptsLocked(const std::string& url, std::chrono::milliseconds hold)
      : thread_([this, url, hold] {
          try {
            pqxx::connection c(url);
            pqxx::work tx(c);
            tx.exec("LOCK TABLE receipt_links IN ACCESS EXCLUSIVE MODE");
            locked_.set_value();
            std::this_thread::sleep_for(hold);
            tx.commit();
          } catch (...) {
            try {
              locked_.set_exception(std::current_exception());
            } catch (const std::future_error&) {  // locked, then failed: the pass's result tells
            }
          }
        }) {
    try {
      locked_.get_future().get();  // rethrows if the lock was never taken
    } catch (...) {
      thread_.join();
      throw;
    }
  }
  ~ReceiptsLocked() { thread_.join(); }

 private:
  std::promise<void> locked_;
  std::thread thread_;
};

}  // namespace

// The pass reads every receipt kept; on a database holding retention's days
// of them it takes longer than a call's 10 s. It has a deadline of its own
// (30 minutes unless given), and one it is given is kept.
TEST_F(ReceiptsStoreTest, ThePassOutlastsACallsTenSecondsAndKeepsTheDeadlineItIsGiven) {
  history();
  {
    ReceiptsLocked held(url, std::chrono::milliseconds(11500));
    const auto t0 = std::chrono::steady_clock::now();
    auto r = verifier.check_receipts(50);
    ASSERT_TRUE(r) << r.error().message;  // cut at 10 s before the pass had its own deadline
    EXPECT_EQ(r->problems_total, 0) << listed(*r);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(11000));
  }
  {
    ReceiptsLocked held(url, std::chrono::milliseconds(3000));
    auto r = verifier.check_receipts(50, Millis{1000});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("statement timeout"), std::string::npos) << r.error().message;
  }
  // The session is usable again after a pass its deadline ended.
  EXPECT_EQ(check().problems_total, 0);
}

// The pass's plan must not depend on fresh statistics. With the run table
// analyzed before most of a burst's runs ended (autovacuum not yet by), the
// ends-without-a-receipt anti-join was planned as a nested loop over the
// receipts' entries: every run compared with every entry, 140 s for 40,000
// runs in the benchmark (docs/performance.md). The function runs without
// nested-loop joins, and without JIT: the penalty on the nested loops that
// remain (its lateral calls) costs the plan in the billions, and
// PostgreSQL compiled it for 3.45 s (schemas/0044). A small history does
// not make the planner choose the quadratic plan by itself, so that part
// is asserted as the setting the function carries and the hashed
// anti-joins under it; the JIT the plan would get without jit=off shows in
// the plan itself.
TEST_F(ReceiptsStoreTest, ThePassHashesItsAntiJoinsWhateverTheStatisticsSayAndIsNotCompiled) {
  history();
  std::string body = text("SELECT prosrc FROM pg_proc WHERE proname = 'baton_receipt_problems'");
  for (std::size_t at; (at = body.find("retained_days")) != std::string::npos;) body.replace(at, 13, "30");
  const std::string settings = text(
      "SELECT coalesce(array_to_string(proconfig, ';'), '') FROM pg_proc WHERE proname = 'baton_receipt_problems'");
  EXPECT_EQ(settings, "enable_nestloop=off;jit=off");
  pqxx::connection c(url);
  pqxx::work tx(c);
  std::size_t from = 0;
  while (from < settings.size()) {
    const std::size_t end = std::min(settings.find(';', from), settings.size());
    const std::string kv = settings.substr(from, end - from);
    const std::size_t eq = kv.find('=');
    if (eq != std::string::npos) tx.exec("SET LOCAL " + kv.substr(0, eq) + " = " + tx.quote(kv.substr(eq + 1)));
    from = end + 1;
  }
  std::string plan;
  for (const auto& row : tx.exec("EXPLAIN " + body)) plan += row[0].as<std::string>() + "\n";
  EXPECT_EQ(plan.find("Nested Loop Anti Join"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Hash Anti Join"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("JIT:"), std::string::npos) << plan;
  // And the pass itself still holds on this history.
  EXPECT_EQ(check().problems_total, 0);
}
