// RunBook::recheck: the production checker's sweep found runs without an
// owner in the table (running_has_owner, assigned_has_owner), runs this
// book's copy does not hold as the table does. The book reads the active
// runs at its next pass and reaps on them; the reaper's fenced write that
// applies is logged `invariant_repaired`, a run it leaves alone
// `invariant_recheck_unrepaired` with what the book saw.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "run_book_driver.h"

namespace baton::leader_core {
namespace {

using namespace run_book_testing;

std::vector<std::string> logged(const std::vector<Effect>& es, const std::string& event) {
  std::vector<std::string> out;
  for (const auto& l : all<Log>(es))
    if (l.text.rfind(event + " ", 0) == 0) out.push_back(l.text);
  return out;
}

std::vector<WriteRun> writes_for(const std::vector<Effect>& es, std::int64_t run) {
  std::vector<WriteRun> out;
  for (const auto& w : all<WriteRun>(es))
    if (w.fence.run.value == run) out.push_back(w);
  return out;
}

/// A book that read no active run at its start, with w1 attached; then run
/// `row` appears in the table (written past this book: by hand, or by a
/// write whose answer the book lost without doubting its copy).
struct Stale {
  Driver d;
  explicit Stale(const store::ActiveRun& row) {
    d.begin({}, hello("w1"));
    d.tick(600ms);
    d.tick(1200ms);  // past the reattach window
    d.rows = {row};
  }
};

TEST(RunBookRecheck, ARunningRunTheBookLostIsReadAndGivenToConfirmingOnceTheSweepFindsIt) {
  Stale s(active(5, RunState::running, "w9"));
  Driver& d = s.d;
  // Without the sweep's word the book reaps on its own copy: nothing for
  // run 5 until the backstop read (every full_read_period()).
  const int reads = d.active_reads;
  for (Millis t : {1800ms, 2400ms, 3000ms}) EXPECT_TRUE(writes_for(d.tick(t), 5).empty()) << t.count();
  EXPECT_EQ(d.active_reads, reads) << "the book trusted its copy";

  d.book.recheck({RunId{5}}, "running_has_owner", d.now);
  auto asked = d.run();
  ASSERT_EQ(logged(asked, "invariant_recheck").size(), 1u);
  EXPECT_NE(logged(asked, "invariant_recheck")[0].find("runs=5"), std::string::npos);
  auto e = d.tick(3100ms);
  EXPECT_EQ(d.active_reads, reads + 1) << "the recheck reads the active runs";
  auto w = writes_for(e, 5);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].kind, RunWriteKind::begin_confirming);
  EXPECT_EQ(w[0].fence.epoch, kEpoch) << "a fenced write, like any of the reaper's";
  EXPECT_TRUE(logged(e, "invariant_repaired").empty()) << "not before the write applied";
  auto done = d.answer(w[0].op, applied());
  auto repaired = logged(done, "invariant_repaired");
  ASSERT_EQ(repaired.size(), 1u);
  EXPECT_EQ(repaired[0], "invariant_repaired run=5 invariant=\"running_has_owner\" write=begin_confirming epoch=3");
}

TEST(RunBookRecheck, AnAssignedRunTheBookLostIsOrphaned) {
  auto row = active(6, RunState::assigned, "w9");
  row.assigned_age_ms = 120'000;
  Stale s(row);
  Driver& d = s.d;
  EXPECT_TRUE(writes_for(d.tick(1800ms), 6).empty());
  d.book.recheck({RunId{6}}, "assigned_has_owner", d.now);
  d.run();
  auto w = writes_for(d.tick(1900ms), 6);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].kind, RunWriteKind::orphan);
  auto repaired = logged(d.answer(w[0].op, applied()), "invariant_repaired");
  ASSERT_EQ(repaired.size(), 1u);
  EXPECT_NE(repaired[0].find("run=6 invariant=\"assigned_has_owner\" write=orphan"), std::string::npos);
}

// A conflict is no repair: logged as not applied, and the run is asked
// about again by the next sweep that still finds it.
TEST(RunBookRecheck, ARepairThatConflictsIsNotCalledRepaired) {
  Stale s(active(5, RunState::running, "w9"));
  Driver& d = s.d;
  d.book.recheck({RunId{5}}, "running_has_owner", d.now);
  d.run();
  auto w = writes_for(d.tick(1300ms), 5);
  ASSERT_EQ(w.size(), 1u);
  store::WriteResult conflict = applied();
  conflict.outcome = store::WriteOutcome::conflict;
  auto e = d.answer(w[0].op, conflict);
  EXPECT_TRUE(logged(e, "invariant_repaired").empty());
  EXPECT_EQ(logged(e, "invariant_repair_not_applied").size(), 1u);
}

// What the sweep saw may be gone by the time the book reads: the run
// finished, or its worker is attached to this leader (the registry row the
// sweep read was behind). The reaper writes nothing; the book says why.
TEST(RunBookRecheck, ARunTheReaperLeavesAloneIsLoggedWithWhatTheBookSaw) {
  Stale s(active(7, RunState::running, "w1"));  // w1 is attached here
  Driver& d = s.d;
  d.book.recheck({RunId{7}, RunId{8}}, "running_has_owner", d.now);
  d.run();
  auto e = d.tick(1300ms);
  EXPECT_TRUE(writes_for(e, 7).empty());
  EXPECT_TRUE(writes_for(e, 8).empty());
  auto unrepaired = logged(e, "invariant_recheck_unrepaired");
  ASSERT_EQ(unrepaired.size(), 2u);
  EXPECT_NE(unrepaired[0].find("run=7 invariant=\"running_has_owner\" seen=RUNNING worker=\"w1\""), std::string::npos)
      << unrepaired[0];
  EXPECT_NE(unrepaired[1].find("run=8 invariant=\"running_has_owner\" seen=not_active"), std::string::npos)
      << unrepaired[1];
  // Settled: the next reaps say nothing more of them.
  EXPECT_TRUE(logged(d.tick(1900ms), "invariant_recheck_unrepaired").empty());
}

}  // namespace
}  // namespace baton::leader_core
