// Receipts the nodes' own role cannot rewrite, and anchors kept outside
// the database that a rewrite by anyone else still differs from
// (schemas/0049, docs/assurance.md "Receipts" and "Anchors"; security
// review N5).
#include <gtest/gtest.h>

#include <string>

#include "receipts_fixture.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class ReceiptsAppendOnlyTest : public ReceiptsStoreTest {
 protected:
  /// As the nodes' runtime role (row rights on every table but the audit
  /// log and the migrations).
  std::string as_runtime(const std::string& sql) {
    return refusal_as(baton::testing::PgInstance::shared().runtime_url(url), sql);
  }
  /// The test's chain of run ends, as a condition on the columns of `alias`.
  std::string chain(const std::string& alias = "") {
    return alias + "lane = '" + lane() + "' AND " + alias + "epoch = " + std::to_string(epoch.value);
  }
};

// Every way the runtime role could rewrite what the receipts say: refused,
// with the table and what was refused named. What the nodes do themselves
// still works: new links, heads, an epoch's end, a first checkpoint, and
// retention's cut (RetentionCutsChainsAtAnAnchorAndTheRestStillHolds).
TEST_F(ReceiptsAppendOnlyTest, TheRuntimeRoleCannotChangeOrRemoveALinkAnAnchorACheckpointOrWhenReceiptsBegan) {
  history();
  const std::string l = chain();
  EXPECT_NE(as_runtime("UPDATE receipt_links SET ends = ends WHERE " + l + " AND seq = 2")
                .find("receipt_links is append-only: UPDATE refused"),
            std::string::npos);
  EXPECT_NE(as_runtime("DELETE FROM receipt_links WHERE " + l + " AND seq = 4")
                .find("receipt_links is append-only: link 4 of chain " + lane() + " (epoch " +
                      std::to_string(epoch.value) + ") cannot be removed: it is within retention"),
            std::string::npos);
  EXPECT_NE(as_runtime("TRUNCATE receipt_links").find("permission denied"), std::string::npos);
  // Past retention's horizon, still only the oldest first, and only with
  // the chain's anchor moved to it with its hash: as retention does.
  age("UPDATE receipt_links SET created_at = created_at - interval '40 days' WHERE " + l + " AND seq <= 2");
  EXPECT_NE(
      as_runtime("DELETE FROM receipt_links WHERE " + l + " AND seq = 2").find("an older link of its chain is kept"),
      std::string::npos);
  EXPECT_NE(
      as_runtime("DELETE FROM receipt_links WHERE " + l + " AND seq = 1").find("the chain's anchor is not past it"),
      std::string::npos);
  EXPECT_NE(as_runtime("WITH gone AS (DELETE FROM receipt_links WHERE " + l +
                       " AND seq = 1 RETURNING epoch, lane, seq) INSERT INTO receipt_anchors SELECT epoch, lane, seq,"
                       " '\\x00'::bytea FROM gone")
                .find("the chain's anchor does not carry its hash"),
            std::string::npos);
  EXPECT_EQ(as_runtime("WITH gone AS (DELETE FROM receipt_links WHERE " + l +
                       " AND seq = 1 RETURNING epoch, lane, seq, hash) INSERT INTO receipt_anchors SELECT * FROM gone"),
            "");
  // The anchor moves only forward, only over links that are gone, and stays.
  EXPECT_NE(as_runtime("UPDATE receipt_anchors SET seq = 0 WHERE " + l).find("an anchor only moves forward"),
            std::string::npos);
  EXPECT_NE(as_runtime("UPDATE receipt_anchors SET seq = 3 WHERE " + l).find("cannot pass link 3, which is kept"),
            std::string::npos);
  EXPECT_NE(as_runtime("DELETE FROM receipt_anchors WHERE " + l).find("receipt_anchors is append-only: DELETE refused"),
            std::string::npos);
  // An epoch's checkpoint is written once; the epoch's row stays.
  const Epoch next = force_election(url, "n2");
  const std::string ended = "epoch = " + std::to_string(epoch.value);
  ASSERT_EQ(text("SELECT receipts IS NOT NULL FROM epoch_history WHERE " + ended), "t");
  EXPECT_NE(as_runtime("UPDATE epoch_history SET receipts = NULL WHERE " + ended)
                .find("the checkpoint of epoch " + std::to_string(epoch.value) + " is written once"),
            std::string::npos);
  EXPECT_NE(
      as_runtime("UPDATE epoch_history SET receipts = receipts || '{\"x\": 1}' WHERE " + ended).find("is written once"),
      std::string::npos);
  EXPECT_NE(as_runtime("DELETE FROM epoch_history WHERE " + ended).find("epoch_history is append-only: DELETE refused"),
            std::string::npos);
  EXPECT_EQ(as_runtime("UPDATE epoch_history SET ended_at = now() WHERE epoch = " + std::to_string(next.value)), "")
      << "an epoch's end is the nodes' to write";
  EXPECT_NE(as_runtime("UPDATE receipts_began SET at = now()").find("receipts_began is append-only: UPDATE refused"),
            std::string::npos);
  EXPECT_NE(as_runtime("DELETE FROM receipts_began").find("receipts_began is append-only: DELETE refused"),
            std::string::npos);
  // The chains still hold, the cut included, once the runs link 1
  // recorded are gone as retention removes them.
  age("DELETE FROM job_runs WHERE id IN (" + std::to_string(a.value) + ", " + std::to_string(b.value) + ")");
  EXPECT_EQ(check().problems_total, 0) << listed(check());
}

// The owner (or a superuser) can get past the triggers and rewrite a run,
// its link, every later link and the head, consistently: the chains then
// hold by themselves. Anchors exported before differ, and say where.
TEST_F(ReceiptsAppendOnlyTest, AConsistentRewriteHoldsByItselfAndIsFoundAgainstAnchorsKeptBefore) {
  history();
  auto kept = verifier.receipt_anchors();
  ASSERT_TRUE(kept) << kept.error().message;
  ASSERT_FALSE(kept->empty());
  const std::string l = chain();
  const std::string seq = std::to_string(link_of(c));
  const std::string run = std::to_string(c.value);
  // Run c failed; the rewrite says it succeeded.
  age("UPDATE job_runs SET exit_code = 0, outcome = 'SUCCEEDED', state = 'SUCCEEDED' WHERE id = " + run);
  age("UPDATE receipt_links k SET ends = ARRAY[baton_receipt_entry('run', r.id, r.attempt, r.state, r.outcome,"
      " r.assigned_worker_id, r.worker_instance, r.exit_code, r.leader_epoch, r.result -> 'tasks')] FROM job_runs r"
      " WHERE r.id = " +
      run + " AND " + chain("k.") + " AND k.seq = " + seq);
  age("DO $$ DECLARE x record; p bytea; BEGIN"
      " FOR x IN SELECT seq, ends FROM receipt_links WHERE " +
      l + " AND seq >= " + seq +
      " ORDER BY seq LOOP"
      "  SELECT hash INTO p FROM receipt_links WHERE " +
      l +
      " AND seq = x.seq - 1;"
      "  UPDATE receipt_links SET prev = coalesce(p, ''::bytea),"
      "   hash = sha256(coalesce(p, ''::bytea) || sha256(convert_to(x.ends::text, 'UTF8'))) WHERE " +
      l +
      " AND seq = x.seq;"
      " END LOOP;"
      " UPDATE receipt_heads h SET hash = k.hash, prev = k.prev, digest = sha256(convert_to(k.ends::text, 'UTF8'))"
      "  FROM receipt_links k WHERE h.kind = 'runs' AND " +
      chain("k.") +
      " AND h.lane = k.lane AND h.epoch = k.epoch AND k.seq = h.seq;"
      " END $$");
  ASSERT_EQ(text("SELECT state FROM job_runs WHERE id = " + run), "SUCCEEDED");
  ReceiptsReport alone = check();
  EXPECT_EQ(alone.problems_total, 0) << "the rewrite is consistent: " << listed(alone);

  auto against = verifier.check_anchors(*kept, 50);
  ASSERT_TRUE(against) << against.error().message;
  EXPECT_EQ(against->checked, static_cast<std::int64_t>(kept->size()));
  ASSERT_EQ(against->problems_total, 1) << listed(*against);
  const ReceiptProblem& p = against->problems[0];
  EXPECT_EQ(p.kind, "runs");
  EXPECT_EQ(p.lane, lane());
  EXPECT_EQ(p.seq, 4) << "the head as it was kept";
  EXPECT_NE(p.problem.find("the chain was rewritten up to here"), std::string::npos) << p.problem;

  // A checkpoint rewritten, and a link cut that retention did not cut.
  force_election(url, "n2");
  auto later = verifier.receipt_anchors();
  ASSERT_TRUE(later);
  age("UPDATE epoch_history SET receipts = receipts || '{\"x\": 1}' WHERE epoch = " + std::to_string(epoch.value));
  age("DELETE FROM receipt_links WHERE " + l + " AND seq = 4");
  against = verifier.check_anchors(*later, 50);
  ASSERT_TRUE(against);
  const std::string all = listed(*against);
  EXPECT_NE(all.find("checkpoint " + std::to_string(epoch.value) + "  #0: its checkpoint's sha256 is "),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("the checkpoint was rewritten"), std::string::npos) << all;
  EXPECT_NE(all.find(lane() + " #4: the link is gone (retention did not cut it)"), std::string::npos) << all;
}

// Each sweep logs the heads that moved since the last: this epoch's chains
// of run ends, the audit log's chains written lately; an unmoved head is
// not logged again.
TEST_F(ReceiptsAppendOnlyTest, EachMarkLogsTheHeadsThatMovedSinceTheLast) {
  history();
  auto first = verifier.mark_receipt_heads();
  ASSERT_TRUE(first) << first.error().message;
  std::string seen;
  for (const auto& h : *first) seen += h.kind + " " + h.lane + " " + std::to_string(h.seq) + "\n";
  EXPECT_NE(seen.find("runs " + lane() + " 4\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("audit "), std::string::npos) << seen;
  for (const auto& h : *first) {
    if (h.kind != "runs") continue;
    EXPECT_EQ(h.epoch, epoch.value);
    EXPECT_EQ(h.hash, text("SELECT encode(hash, 'hex') FROM receipt_links WHERE lane = '" + h.lane +
                           "' AND epoch = " + std::to_string(h.epoch) + " AND seq = " + std::to_string(h.seq)));
  }
  auto again = verifier.mark_receipt_heads();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty()) << "nothing moved";
  end(run_of("etl"), true);
  auto moved = verifier.mark_receipt_heads();
  ASSERT_TRUE(moved);
  seen.clear();
  for (const auto& h : *moved) seen += h.kind + " " + h.lane + " " + std::to_string(h.seq) + "\n";
  EXPECT_NE(seen.find("runs " + lane() + " 5\n"), std::string::npos) << seen;
  // What was marked is what an export holds, and what a check against it
  // finds holding.
  auto kept = verifier.check_anchors(*first, 50);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->problems_total, 0) << listed(*kept);
}

}  // namespace
