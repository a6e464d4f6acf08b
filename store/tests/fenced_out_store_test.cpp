// What a fenced leader could not write, in the decision ledger (issue 34,
// docs/scheduling.md "The decision ledger"): one `fenced_out` entry per run
// a refused write named, with its job and slot and the epoch that had
// begun, one for a write of no run; written by a node that no longer leads.
#include <gtest/gtest.h>

#include "overlap_fixture.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

TEST_F(OverlapStoreTest, WritesRefusedForANewerEpochAreRecordedAsFencedOut) {
  job("free", std::nullopt);
  const RunId a = run_of("free"), b = run_of("free");
  const Epoch newer{epoch.value + 1};
  ASSERT_TRUE(leader.record_fenced_out(
      epoch, "n1",
      {FencedOut{"assign_batch", {a, b}, "", newer}, FencedOut{"cron_create", {}, "job=\"nightly\"", newer}}));
  EXPECT_EQ(text("SELECT string_agg(reason || ' ' || coalesce(run_id::text, '-') || ' ' || coalesce(j.name, '-') || ' '"
                 " || epoch || ' ' || (details->>'current_epoch') || ' ' || (details->>'node') || ' '"
                 " || coalesce(details->>'subject', '-'), ', ' ORDER BY d.id)"
                 " FROM decision_ledger d LEFT JOIN job_definitions j ON j.id = d.job_definition_id"
                 " WHERE decision = 'fenced_out'"),
            "assign_batch " + std::to_string(a.value) + " free " + std::to_string(epoch.value) + " " +
                std::to_string(newer.value) + " n1 -, assign_batch " + std::to_string(b.value) + " free " +
                std::to_string(epoch.value) + " " + std::to_string(newer.value) + " n1 -, cron_create - - " +
                std::to_string(epoch.value) + " " + std::to_string(newer.value) + " n1 job=\"nightly\"");
  EXPECT_TRUE(leader.record_fenced_out(epoch, "n1", {})) << "nothing to record";
}

}  // namespace
