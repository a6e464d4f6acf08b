// The sweep over a fake VerifyStore: slices taken from the recorded cursor
// until one is not full, each recorded with its verdict; a slice another
// node recorded first ends the sweep; `baton verify`'s pass records nothing.
#include "baton/verify/history_sweep.h"

#include <gtest/gtest.h>

#include <set>

using namespace baton;
using namespace baton::verify;

namespace {

struct FixedClock final : Clock {
  MonoTime mono() const override { return MonoTime{}; }
};

/// Runs 1..n finished, each succeeded once; run `twice` succeeded twice.
class FakeVerifyStore final : public store::VerifyStore {
 public:
  std::int64_t n = 5, twice = 0;
  /// Run 100 RUNNING on a worker gone ten minutes, read with the first slice.
  bool stuck = false;
  bool refuse = false;
  store::VerifyCursor cursor;
  std::vector<store::SweepRecord> records;
  std::set<std::pair<std::string, std::string>> known;
  int marks = 0;

  Result<store::VerifyCursor> verify_cursor() override { return cursor; }
  Result<store::RecordedSlice> recorded_slice(const store::VerifyCursor& after, Millis, int limit,
                                              bool running_now) override {
    store::RecordedSlice s;
    s.next = after;
    if (stuck && running_now) {
      s.history.taken_us = 2'000'000'000'000'000;
      s.history.workers["gone"] = {"gone", false, s.history.taken_us - 600'000'000};
      checker::RunRow r;
      r.id = 100;
      r.job = "j";
      r.state = "RUNNING";
      r.attempt = 1;
      r.worker = "gone";
      r.continuation = "NONE";
      s.history.runs[100] = r;
      s.history.context_runs.insert(100);
    }
    for (std::int64_t id = after.run + 1; id <= n && s.runs < limit; ++id) {
      checker::RunRow r;
      r.id = id;
      r.job = "j";
      r.state = "SUCCEEDED";
      r.attempt = 1;
      r.max_attempts = 3;
      s.history.runs[id] = r;
      for (int a = 1; a <= (id == twice ? 2 : 1); ++a) {
        checker::AttemptRow row;
        row.run = id;
        row.attempt = a;
        row.worker = "w1";
        row.outcome = "SUCCEEDED";
        row.started_us = id * 10'000'000 + a * 1'000'000;
        row.finished_us = *row.started_us + 1000;
        s.history.attempts.push_back(row);
      }
      s.runs++;
      s.next = {id * 1000, id};
    }
    s.full = s.runs == limit;
    return s;
  }
  Result<store::SweepRecorded> record_sweep(const store::SweepRecord& r) override {
    if (refuse || !(r.from == cursor)) return store::SweepRecorded{false, 0};
    records.push_back(r);
    cursor = r.to;
    store::SweepRecorded out{true, 0};
    for (const auto& v : r.violations)
      if (known.emplace(v.invariant, v.finding).second) out.new_findings.emplace(v.invariant, v.finding);
    out.new_violations = static_cast<std::int64_t>(out.new_findings.size());
    return out;
  }
  Result<std::vector<store::ReceiptAnchor>> mark_receipt_heads() override {
    ++marks;
    return std::vector<store::ReceiptAnchor>(2);
  }
};

TEST(HistorySweep, SlicesAreTakenUntilOneIsNotFullAndEachIsRecordedWithItsVerdict) {
  FakeVerifyStore store;
  store.twice = 4;
  SweepSettings settings;
  settings.slice_runs = 2;
  FixedClock clock;
  auto out = sweep_once(store, settings, "n1", 7, clock);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->slices, 3);  // 2 + 2 + 1
  EXPECT_EQ(out->tally.runs, 5);
  EXPECT_EQ(out->new_violations, 1);
  ASSERT_EQ(store.records.size(), 3u);
  EXPECT_EQ(store.records[1].violations.size(), 1u) << "run 4 is in the second slice";
  EXPECT_EQ(store.records[1].epoch, 7);
  EXPECT_EQ(store.records[1].by_invariant.at("one_successful_execution").second, 1);
  EXPECT_EQ(store.cursor.run, 5);
  // The receipts' heads are marked once per sweep, after its slices.
  EXPECT_EQ(store.marks, 1);
  EXPECT_EQ(out->heads_marked, 2);
  // Caught up: the next sweep reads one empty slice, and marks again.
  out = sweep_once(store, settings, "n1", 7, clock);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->slices, 1);
  EXPECT_EQ(out->tally.runs, 0);
  EXPECT_EQ(store.marks, 2);
}

// A node logs what a sweep found for the first time only: a finding seen
// again (the same runs judged again after a cursor reset, or a run still
// RUNNING on a gone worker) is in the tally, not among the new.
TEST(HistorySweep, AFindingSeenAgainIsNotNew) {
  FakeVerifyStore store;
  store.twice = 2;
  SweepSettings settings;
  FixedClock clock;
  auto out = sweep_once(store, settings, "n1", 7, clock);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->new_findings.size(), 1u);
  EXPECT_EQ(out->new_findings[0].invariant, "one_successful_execution");
  EXPECT_EQ(out->new_findings[0].runs, std::vector<std::int64_t>{2});
  store.cursor = {};
  out = sweep_once(store, settings, "n1", 8, clock);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->tally.violations.size(), 1u) << "found again";
  EXPECT_TRUE(out->new_findings.empty()) << "but not new";
  EXPECT_EQ(out->new_violations, 0);
}

// A run left RUNNING on a worker gone for good is the leader's to repair:
// the sweep names it for the book to re-read at every sweep that finds it
// (found again means not repaired yet), and names no run whose finding
// nothing the leader writes could undo.
TEST(HistorySweep, RunsWithoutAnOwnerAreNamedForRepairAtEverySweepThatFindsThem) {
  FakeVerifyStore store;
  store.twice = 2;
  store.stuck = true;
  SweepSettings settings;
  FixedClock clock;
  auto out = sweep_once(store, settings, "n1", 7, clock);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->new_violations, 2) << "run 2 twice, run 100 without an owner";
  ASSERT_EQ(out->to_repair.size(), 1u);
  EXPECT_EQ(out->to_repair.at("running_has_owner"), std::vector<std::int64_t>{100});
  store.n = 6;  // one more run finished
  out = sweep_once(store, settings, "n1", 7, clock);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->new_violations, 0);
  EXPECT_EQ(out->to_repair.at("running_has_owner"), std::vector<std::int64_t>{100}) << "found again: asked again";
  EXPECT_TRUE(repairable_by_leader("assigned_has_owner"));
  EXPECT_FALSE(repairable_by_leader("one_successful_execution"));
}

TEST(HistorySweep, ASweepStopsBetweenSlicesWhenToldTo) {
  FakeVerifyStore store;
  SweepSettings settings;
  settings.slice_runs = 2;
  int asked = 0;
  settings.keep_going = [&] { return ++asked < 2; };  // one more slice, then the node stops
  FixedClock clock;
  auto out = sweep_once(store, settings, "n1", 7, clock);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->slices, 2);
  EXPECT_EQ(store.cursor.run, 4) << "the runs of the slices taken are recorded";
}

TEST(HistorySweep, ASliceRecordedByAnotherNodeEndsTheSweep) {
  FakeVerifyStore store;
  store.refuse = true;
  SweepSettings settings;
  settings.slice_runs = 2;
  FixedClock clock;
  auto out = sweep_once(store, settings, "n1", 7, clock);
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->refused);
  EXPECT_EQ(out->slices, 1);
  EXPECT_EQ(store.marks, 0) << "no longer this node's to mark";
  EXPECT_EQ(out->tally.runs, 0) << "the refused slice's runs are the other node's";
}

TEST(HistorySweep, AFullPassJudgesEverythingAndRecordsNothing) {
  FakeVerifyStore store;
  store.twice = 2;
  int calls = 0;
  auto tally = verify_all(store, {}, 2, {}, [&](const VerifyTally&) { ++calls; });
  ASSERT_TRUE(tally);
  EXPECT_EQ(tally->runs, 5);
  EXPECT_EQ(tally->violations_total, 1);
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(store.records.empty());
}

}  // namespace
