// RunBook's lifecycle rules, one per test: inputs in, effects out. No
// database, no sockets, no clock: reads and writes are answered by hand.
#include "baton/leader_core/run_book.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "run_book_driver.h"

namespace baton::leader_core {
namespace {

using namespace std::chrono_literals;
using namespace run_book_testing;

TEST(RunBook, StartIsGrantedOnlyAfterItsWriteApplied) {
  Driver d;
  auto r = active(1, RunState::assigned, "w1");
  d.begin({r}, hello("w1"));
  auto e = d.msg(7, "w1", protocol::Start{ref(r)});
  EXPECT_TRUE(sent<protocol::StartGranted>(e).empty());
  e = d.tick(10ms);  // the pass ends: its starts are written as one batch
  auto starts = all<WriteStarts>(e);
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(starts[0].rows.size(), 1u);
  EXPECT_EQ(starts[0].rows[0].attempt.lease_token, r.lease_token);
  EXPECT_TRUE(sent<protocol::StartGranted>(e).empty()) << "granted before the start write applied";
  e = d.answer(starts[0].op, batch(kEpoch, {1}));
  auto granted = sent<protocol::StartGranted>(e);
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_EQ(granted[0].ref.lease_token, r.lease_token);
}

TEST(RunBook, StartWhoseWriteDidNotApplyIsNotGranted) {
  Driver d;
  auto r = active(1, RunState::assigned, "w1");
  d.begin({r}, hello("w1"));
  d.msg(7, "w1", protocol::Start{ref(r)});
  auto starts = all<WriteStarts>(d.tick(10ms));
  ASSERT_EQ(starts.size(), 1u);
  d.rows = {};  // it was orphaned meanwhile: the re-read no longer has it
  auto e = d.answer(starts[0].op, batch(kEpoch, {}));
  EXPECT_TRUE(sent<protocol::StartGranted>(e).empty());
  ASSERT_EQ(sent<protocol::StartDenied>(e).size(), 1u);
}

TEST(RunBook, RepeatedStartOfARunningAttemptIsGrantedAgain) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  d.begin({r}, hello("w1"));
  auto e = d.msg(7, "w1", protocol::Start{ref(r)});
  ASSERT_EQ(sent<protocol::StartGranted>(e).size(), 1u) << "the start right is already in the database";
  EXPECT_TRUE(all<WriteStarts>(e).empty());
  EXPECT_TRUE(sent<protocol::StartDenied>(e).empty());
}

TEST(RunBook, StartOfAnotherWorkersAssignmentIsDenied) {
  Driver d;
  auto r = active(1, RunState::assigned, "w2");
  d.begin({r}, hello("w1"));
  auto e = d.msg(7, "w1", protocol::Start{ref(r)});
  EXPECT_EQ(sent<protocol::StartDenied>(e).size(), 1u);
  EXPECT_TRUE(all<WriteStarts>(d.tick(10ms)).empty());
}

// Issue 37, item 3: the report of an attempt that is no longer current is
// handed to the database as a late report (kept if a leader had given up
// on the attempt), never as a write of the run, and acknowledged only once
// the database answered: without an answer the worker must send it again.
TEST(RunBook, ASupersededAttemptsReportIsRecordedAsALateReportNotWrittenToTheRun) {
  Driver d;
  auto old = active(1, RunState::running, "w1", 1);
  auto now = active(1, RunState::running, "w2", 2);
  d.begin({now}, hello("w1"));
  auto report = finish(old, protocol::Outcome::failed);
  report.exit_code = 7;
  auto e = d.msg(7, "w1", report);
  auto writes = all<WriteRun>(e);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::record_late_report);
  EXPECT_EQ(writes[0].fence.run, RunId{1});
  EXPECT_EQ(writes[0].fence.epoch, kEpoch);
  EXPECT_EQ(writes[0].attempt.worker_id, "w1");
  EXPECT_EQ(writes[0].attempt.attempt, 1);
  EXPECT_EQ(writes[0].attempt.lease_token, old.lease_token);
  EXPECT_EQ(writes[0].finish.final_state, RunState::failed);
  EXPECT_EQ(writes[0].finish.exit_code, 7);
  EXPECT_TRUE(sent<protocol::FinishAck>(e).empty()) << "acknowledged only once the database answered";
  EXPECT_TRUE(all<WriteFinishes>(d.tick(10ms)).empty()) << "the run is not written";
  EXPECT_EQ(sent<protocol::FinishAck>(d.answer(writes[0].op, applied())).size(), 1u);
}

TEST(RunBook, AReplayWithNothingToRecordIsAcknowledgedAndAFailedRecordIsNot) {
  Driver d;
  auto old = active(1, RunState::running, "w1", 1);
  auto now = active(1, RunState::running, "w2", 2);
  d.begin({now}, hello("w1"));
  auto writes = all<WriteRun>(d.msg(7, "w1", finish(old, protocol::Outcome::failed)));
  ASSERT_EQ(writes.size(), 1u);
  store::WriteResult nothing;
  nothing.outcome = store::WriteOutcome::conflict;
  nothing.current_epoch = kEpoch;
  EXPECT_EQ(sent<protocol::FinishAck>(d.answer(writes[0].op, nothing)).size(), 1u)
      << "a replay, or an attempt no leader gave up on: nothing to keep";
  writes = all<WriteRun>(d.msg(7, "w1", finish(old, protocol::Outcome::failed)));
  ASSERT_EQ(writes.size(), 1u);
  d.book.result(writes[0].op, Result<store::WriteResult>(make_error(Errc::db_unavailable, "connection lost")), d.now);
  EXPECT_TRUE(sent<protocol::FinishAck>(d.run()).empty()) << "no answer: the worker sends it again";
}

// A success of an attempt superseded since: the run is read first (a run
// still waiting to retry that very attempt takes the success instead).
TEST(RunBook, ASupersededAttemptsLateSuccessIsRecordedWhenARetryAlreadyTookTheRun) {
  Driver d;
  auto old = active(1, RunState::running, "w1", 1);
  auto now = active(1, RunState::running, "w2", 2);
  d.begin({now}, hello("w1"));
  auto report = finish(old, protocol::Outcome::succeeded);
  report.exit_code = 0;
  auto reads = all<ReadRun>(d.msg(7, "w1", report));
  ASSERT_EQ(reads.size(), 1u);
  store::RunRow row;
  row.id = RunId{1};
  row.state = RunState::running;
  row.attempt = 2;
  row.assigned_worker_id = "w2";
  auto writes = all<WriteRun>(d.answer(reads[0].op, std::optional<store::RunRow>{row}));
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::record_late_report);
  EXPECT_EQ(writes[0].finish.final_state, RunState::succeeded);
  EXPECT_EQ(writes[0].finish.exit_code, 0);
  EXPECT_EQ(sent<protocol::FinishAck>(d.answer(writes[0].op, applied())).size(), 1u);
}

// The one difference between the two readings of a reported outcome: a
// late CANCELED is recorded as CANCELED (what happened), a current
// attempt's CANCELED that no cancel of this leader stands behind is a
// failure that may be retried, never a final CANCELED.
TEST(RunBook, ALateCanceledIsKeptAsCanceledAndAnUnrequestedCurrentOneCountsAsAFailure) {
  Driver d;
  auto old = active(1, RunState::running, "w1", 1);
  auto now = active(1, RunState::running, "w2", 2);
  auto other = active(2, RunState::running, "w2", 1);
  d.begin({now, other}, hello("w1"));
  d.attach(8, hello("w2", {ref(now), ref(other)}));
  auto writes = all<WriteRun>(d.msg(7, "w1", finish(old, protocol::Outcome::canceled)));
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::record_late_report);
  EXPECT_EQ(writes[0].finish.final_state, RunState::canceled);
  d.msg(8, "w2", finish(other, protocol::Outcome::canceled));
  auto finishes = all<WriteFinishes>(d.tick(10ms));
  ASSERT_EQ(finishes.size(), 1u);
  ASSERT_EQ(finishes[0].rows.size(), 1u);
  EXPECT_EQ(finishes[0].rows[0].finish.final_state, RunState::failed);
  EXPECT_EQ(finishes[0].rows[0].finish.error_code, "failed");
}

TEST(RunBook, FinishOfAnotherEpochsAttemptIsAdoptedBeforeItIsWritten) {
  Driver d;
  auto r = active(1, RunState::running, "w1", 1, Epoch{2});
  d.rows = {r};
  d.start();
  // w1 reattaches without listing the run (its hello raced the finish).
  d.attach(7, hello("w1"));
  auto e = d.msg(7, "w1", finish(r, protocol::Outcome::succeeded));
  auto writes = all<WriteRun>(e);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::adopt);
  EXPECT_EQ(writes[0].fence.epoch, kEpoch);
  EXPECT_TRUE(all<WriteFinishes>(d.tick(10ms)).empty()) << "no finish before the adoption applied";
  // Once the adoption is answered the finish is queued, and the next tick
  // hands it to the finish lane.
  EXPECT_TRUE(all<WriteFinishes>(d.answer(writes[0].op, applied(Version{11}))).empty());
  auto finishes = all<WriteFinishes>(d.tick(20ms));
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(finishes[0].rows[0].expected_version, Version{11});
  auto acks = sent<protocol::FinishAck>(d.answer(finishes[0].op, batch(kEpoch, {1})));
  EXPECT_EQ(acks.size(), 1u);
}

TEST(RunBook, AFencedBatchMeansNoMessageOrWriteEver) {
  Driver d;
  auto r = active(1, RunState::assigned, "w1");
  auto r2 = active(2, RunState::assigned, "w1");
  d.begin({r, r2}, hello("w1"));
  d.msg(7, "w1", protocol::Start{ref(r)});
  auto starts = all<WriteStarts>(d.tick(10ms));
  ASSERT_EQ(starts.size(), 1u);
  auto e = d.answer(starts[0].op, batch(Epoch{4}, {}));
  EXPECT_TRUE(d.book.fenced());
  EXPECT_TRUE(sent<protocol::StartGranted>(e).empty());
  // What it meant to write is kept for the decision ledger (fenced_out).
  ASSERT_EQ(d.book.fenced_out().size(), 1u);
  EXPECT_EQ(d.book.fenced_out()[0].op, "start_batch");
  EXPECT_EQ(d.book.fenced_out()[0].runs, std::vector<RunId>{RunId{1}});
  // Whatever comes afterwards: nothing external.
  d.msg(7, "w1", protocol::Start{ref(r2)});
  d.attach(8, hello("w2"));
  d.book.cancel(RunId{1}, "operator", d.now);
  for (const auto& x : d.tick(5000ms)) EXPECT_FALSE(is_external(x));
}

TEST(RunBook, AnOrphanWithNoAssignmentsLeftIsFailed) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  store::DueRun due;
  due.id = RunId{5};
  due.version = Version{3};
  due.state = RunState::orphaned;
  due.unstarted_assignments = RuntimeConfig{}.max_unstarted_assignments;
  d.due = {due};
  auto e = d.tick(100ms);
  auto writes = all<WriteRun>(e);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::fail_unrunnable);
  EXPECT_EQ(writes[0].error_code, "orphaned");
  EXPECT_TRUE(all<WriteAssigns>(e).empty());
  EXPECT_TRUE(sent<protocol::Assign>(e).empty());
}

TEST(RunBook, DueRunsAreAssignedAndSentOnlyAfterTheAssignApplied) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  store::DueRun due;
  due.id = RunId{5};
  due.version = Version{3};
  d.due = {due};
  auto e = d.tick(100ms);
  auto assigns = all<WriteAssigns>(e);
  ASSERT_EQ(assigns.size(), 1u);
  EXPECT_EQ(assigns[0].rows[0].worker_id, "w1");
  EXPECT_TRUE(sent<protocol::Assign>(e).empty());
  auto msgs = sent<protocol::Assign>(d.answer(assigns[0].op, assigned(5)));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].ref.lease_token, "t5");
  ASSERT_EQ(msgs[0].tasks.size(), 1u) << "a run without a job is one NOOP task";
}

/// A worker that speaks protocol 4 (its assignments to free slots carry
/// the start), with `capacity` slots and `prefetch` more queued.
protocol::Hello hello_v4(const std::string& worker, int capacity, int prefetch = 0) {
  protocol::Hello h = hello(worker);
  h.capacity = capacity;
  h.prefetch = prefetch;
  h.protocol_max = protocol::protocol_version_max;
  return h;
}

// The start granted with the assignment (protocol 4; docs/fencing.md): the
// rows placed in a worker's free slots carry the start into the statement,
// the assign frames leave only after it applied, and say so; a row placed
// in the prefetch queue, and a run not yet due to start, keep the separate
// start. Removing the grant from either the row or the frame fails this.
TEST(RunBook, AnAssignmentToAFreeSlotCarriesTheStartWrittenWithIt) {
  Driver d;
  d.start();
  d.attach(7, hello_v4("w1", 2, 2));
  d.due = {due_run(5, 3), due_run(6, 3), due_run(7, 3), due_run(8, 3, 60000)};
  auto e = d.tick(100ms);
  auto assigns = all<WriteAssigns>(e);
  ASSERT_EQ(assigns.size(), 1u);
  ASSERT_EQ(assigns[0].rows.size(), 4u);
  std::map<std::int64_t, bool> starts;
  for (const auto& row : assigns[0].rows) {
    starts[row.run.value] = row.start.has_value();
    if (row.start) {
      EXPECT_EQ(row.start->worker_instance, "w1-i1");
      EXPECT_GT(row.start->stale_after.count(), 0);
    }
  }
  EXPECT_EQ(starts, (std::map<std::int64_t, bool>{{5, true}, {6, true}, {7, false}, {8, false}}))
      << "two free slots; a queued run and one not yet due start separately";
  EXPECT_TRUE(sent<protocol::Assign>(e).empty()) << "nothing leaves before the statement applied";
  auto result = batch(kEpoch, {5, 6, 7, 8});
  for (auto id : {5, 6, 7, 8}) {
    result.applied[id].lease_token = "t" + std::to_string(id);
    result.applied[id].attempt = 1;
  }
  e = d.answer(assigns[0].op, result);
  std::map<std::int64_t, bool> granted;
  for (const auto& a : sent<protocol::Assign>(e)) granted[a.ref.run_id] = a.start_granted;
  EXPECT_EQ(granted, starts);
  // The book holds them RUNNING: a start the worker asks again is granted
  // again without a write, and the next pass places nothing in slots taken.
  e = d.msg(7, "w1", protocol::Start{{5, 1, "t5"}});
  EXPECT_EQ(sent<protocol::StartGranted>(e).size(), 1u);
  EXPECT_TRUE(all<WriteStarts>(d.tick(200ms)).empty());
}

// Found by the 30-minute chaos run (one-way delays: `partition_workers`
// holds the node's frames while the worker's heartbeats keep arriving): a
// granted assign still on its way is not in the worker's lists, and the
// lost rule (two heartbeats that leave a RUNNING attempt out) declared it
// lost and retried it elsewhere; the frame then arrived and the worker ran
// the stale attempt too. While the connection that carries the frame lives,
// heartbeats prove nothing about it; past the lost rule's count the
// connection is closed instead, and once the worker lists it, or that
// connection is gone, the rule applies again. (Without grant_in_flight a
// reap below writes the attempt off: checked.)
TEST(RunBook, AGrantedAssignOnItsWayIsNotLostForBeingUnlisted) {
  RuntimeConfig c = config();
  Driver d(c);
  d.start();
  d.attach(7, hello_v4("w1", 1));
  d.due = {due_run(5, 3)};
  auto assigns = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  ASSERT_TRUE(assigns[0].rows[0].start);
  d.due = {};
  auto result = assigned(5);
  result.applied[5].new_version = Version{5};
  ASSERT_EQ(sent<protocol::Assign>(d.answer(assigns[0].op, result)).size(), 1u);
  store::ActiveRun row = active(5, RunState::running, "w1");
  row.version = Version{5};
  row.lease_token = "t5";
  d.rows = {row};
  // Heartbeats that do not list it, from a worker the frame has not reached:
  // they prove nothing, so nothing is written off; after as many as would
  // make an attempt lost, the connection is closed (nothing of it can arrive
  // after that, and the worker's next hello says what it holds).
  Millis t = 200ms;
  bool closed = false;
  for (int i = 0; i < 4; ++i) {
    d.msg(7, "w1", protocol::Heartbeat{});
    t += 600ms;
    auto e = d.tick(t);
    for (const auto& w : all<WriteRun>(e))
      if (w.kind != RunWriteKind::begin_confirming)
        ADD_FAILURE() << "heartbeat " << i << ": wrote kind " << static_cast<int>(w.kind);
    for (const auto& c : all<Close>(e)) closed |= c.link == 7;
  }
  EXPECT_TRUE(closed) << "an unacknowledged grant closes its connection";
  // (Once the worker lists it, or the connection is gone -- the next test
  // -- heartbeats that leave it out count again.)
}

// The connection that carried the granted assign is gone: no frame of it can
// arrive any more, and the worker back on a new connection without the
// attempt has positive evidence against it again.
TEST(RunBook, AGrantedAssignWhoseConnectionIsGoneCountsAsUnlistedAgain) {
  Driver d;
  d.start();
  d.attach(7, hello_v4("w1", 1));
  d.due = {due_run(5, 3)};
  auto assigns = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  d.due = {};
  auto result = assigned(5);
  result.applied[5].new_version = Version{5};
  d.answer(assigns[0].op, result);
  store::ActiveRun row = active(5, RunState::running, "w1");
  row.version = Version{5};
  row.lease_token = "t5";
  d.rows = {row};
  d.book.detached(7, "w1", "test", d.now);
  d.run();
  d.attach(8, hello_v4("w1", 1));  // back at once, holding nothing
  std::vector<WriteRun> writes;
  Millis t = 200ms;
  for (int i = 0; i < 4 && writes.empty(); ++i) {
    d.msg(8, "w1", protocol::Heartbeat{});
    t += 600ms;
    writes = all<WriteRun>(d.tick(t));
  }
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].finish.error_code, "attempt_lost");
}

TEST(RunBook, AnOlderWorkerAndAnAssignmentNotAppliedGetNoStart) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));  // protocol 1: the separate start
  d.due = {due_run(5, 3)};
  auto assigns = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  EXPECT_FALSE(assigns[0].rows[0].start);
  auto msgs = sent<protocol::Assign>(d.answer(assigns[0].op, assigned(5)));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_FALSE(msgs[0].start_granted);

  Driver v4;
  v4.start();
  v4.attach(7, hello_v4("w1", 1));
  v4.due = {due_run(5, 3)};
  assigns = all<WriteAssigns>(v4.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  EXPECT_TRUE(assigns[0].rows[0].start);
  // Lost a race (or the write failed): no frame, no start.
  EXPECT_TRUE(sent<protocol::Assign>(v4.answer(assigns[0].op, batch(kEpoch, {}))).empty());
}

// Overlap control at dispatch: a job limited to one instance with one run
// already active gets nothing; of two mutually exclusive runs only the first goes,
// holding the lock; the held one is recorded once in the decision ledger.
TEST(RunBook, RunsOverTheirJobsLimitAreHeldBackAndRecordedOnce) {
  Driver d;
  auto busy = active(1, RunState::running, "w1");
  busy.job_name = "single";
  busy.instance_no = 1;
  d.begin({busy}, hello("w1", {ref(busy)}));
  auto due_run = [](std::int64_t id, const char* job, std::optional<int> limit, bool exclusive) {
    store::DueRun r;
    r.id = RunId{id};
    r.version = Version{1};
    r.job_name = job;
    r.instance_limit = limit;
    r.mutually_exclusive = exclusive;
    return r;
  };
  d.due = {due_run(5, "single", 1, false), due_run(6, "x", std::nullopt, true), due_run(7, "y", 2, true)};
  auto e = d.tick(100ms);
  auto assigns = all<WriteAssigns>(e);
  ASSERT_EQ(assigns.size(), 1u);
  ASSERT_EQ(assigns[0].rows.size(), 1u);
  EXPECT_EQ(assigns[0].rows[0].run, RunId{6});
  EXPECT_TRUE(assigns[0].rows[0].exclusive_lock);
  EXPECT_FALSE(assigns[0].rows[0].instance_no);
  auto held = all<RecordDecision>(e);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].run, RunId{5});
  EXPECT_EQ(held[0].reason, "max_instances");
  EXPECT_EQ(held[1].run, RunId{7});
  EXPECT_EQ(held[1].reason, "mutually_exclusive");
  d.answer(assigns[0].op, batch(kEpoch, {}));  // lost a race: nothing applied
  EXPECT_TRUE(all<RecordDecision>(d.tick(300ms)).empty()) << "recorded once";
}

// Keyed concurrency at dispatch (schemas/0035): the run within its key's
// limit is written with its key and slot, the run over it is held and the
// ledger says why in words ("waiting: key acme at its limit of 1").
TEST(RunBook, ARunOverItsKeysLimitIsHeldBackWithTheKeyInTheLedger) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  auto keyed = [](std::int64_t id) {
    store::DueRun r;
    r.id = RunId{id};
    r.version = Version{1};
    r.job_name = "sync";
    r.keyed.concurrency_key = "acme";
    r.keyed.key_limit = 1;
    r.keyed.rate_limit = 5;
    r.keyed.rate_per_ms = 1000;
    return r;
  };
  d.due = {keyed(5), keyed(6)};
  auto e = d.tick(100ms);
  auto assigns = all<WriteAssigns>(e);
  ASSERT_EQ(assigns.size(), 1u);
  ASSERT_EQ(assigns[0].rows.size(), 1u);
  EXPECT_EQ(assigns[0].rows[0].run, RunId{5});
  EXPECT_EQ(assigns[0].rows[0].concurrency_key, "acme");
  EXPECT_EQ(assigns[0].rows[0].key_slot, 1);
  EXPECT_EQ(assigns[0].rows[0].rate_slot, 1);
  auto held = all<RecordDecision>(e);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].run, RunId{6});
  EXPECT_EQ(held[0].reason, "concurrency_key");
  EXPECT_EQ(held[0].details_json, R"({"detail":"waiting: key acme at its limit of 1"})");
}

// After a failover a leader may find many ORPHANED runs: they are handed out
// at runtime.reassign_rate, not all in one pass.
TEST(RunBook, ReassignmentsOfOrphanedRunsArePaced) {
  RuntimeConfig c = config();
  c.reassign_rate = 2;
  c.reassign_burst = 2;
  Driver d{c};
  d.start();
  d.attach(7, hello("w1"));
  for (int i = 1; i <= 5; ++i) {
    store::DueRun r;
    r.id = RunId{100 + i};
    r.version = Version{1};
    r.state = RunState::orphaned;
    d.due.push_back(r);
  }
  auto first = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].rows.size(), 2u) << "the burst";
  d.answer(first[0].op, batch(kEpoch, {}));
  auto later = all<WriteAssigns>(d.tick(600ms));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].rows.size(), 1u) << "2/s: one more after half a second";
}

TEST(RunBook, WhileDispatchIsDisabledNothingIsDispatchedAndEachWaitingRunIsRecordedOnce) {
  Driver d;
  d.controls.dispatch_enabled = false;
  d.start();
  d.attach(7, hello("w1"));
  store::DueRun due;
  due.id = RunId{5};
  d.due = {due};
  d.waiting = {due};
  auto e = d.tick(100ms);
  EXPECT_TRUE(all<ReadDue>(e).empty());
  EXPECT_TRUE(all<WriteAssigns>(e).empty());
  // Why it waits goes to the ledger, once (the leader looks every 5 s).
  auto heard_at = [&](Millis t) {  // w1 stays attached
    d.now = at(t);
    d.msg(7, "w1", protocol::Heartbeat{});
  };
  heard_at(4000ms);
  e = d.tick(5000ms);
  auto waiting_reads = all<ReadWaiting>(e);
  ASSERT_EQ(std::count_if(waiting_reads.begin(), waiting_reads.end(), [](const auto& r) { return !r.for_keys; }), 1);
  auto recorded = all<RecordDecision>(e);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].run, RunId{5});
  EXPECT_EQ(recorded[0].decision, "held_back");
  EXPECT_EQ(recorded[0].reason, "dispatch_disabled");
  EXPECT_TRUE(all<WriteAssigns>(e).empty());
  heard_at(9000ms);
  EXPECT_TRUE(all<RecordDecision>(d.tick(10000ms)).empty()) << "once per run";
  // Enabled again: it applies at the next read of the controls.
  d.controls.dispatch_enabled = true;
  e = d.tick(10200ms);
  EXPECT_TRUE(all<WriteAssigns>(e).empty()) << "the controls are read every controls_every";
  e = d.tick(10600ms);
  ASSERT_EQ(all<WriteAssigns>(e).size(), 1u);
  EXPECT_TRUE(all<ReadWaiting>(d.tick(15000ms)).empty()) << "nothing is read for it while dispatch is enabled";
}

TEST(RunBook, NothingIsDispatchedBeforeTheControlsWereRead) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  store::DueRun due;
  due.id = RunId{5};
  d.due = {due};
  d.fail_controls = true;
  auto e = d.tick(100ms);
  EXPECT_EQ(all<ReadControls>(e).size(), 1u);
  EXPECT_TRUE(all<ReadDue>(e).empty());
  d.fail_controls = false;
  e = d.tick(200ms);
  EXPECT_EQ(all<ReadControls>(e).size(), 1u) << "until a read succeeds, every pass reads them";
  EXPECT_EQ(all<WriteAssigns>(e).size(), 1u);
}

TEST(RunBook, ADrainedWorkerGetsNoNewRunsAndAnotherOneDoes) {
  Driver d;
  d.controls.worker_holds["w1"] = "draining";
  d.start();
  d.attach(7, hello("w1"));
  d.attach(8, hello("w2"));
  store::DueRun due;
  due.id = RunId{5};
  d.due = {due};
  auto assigns = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  ASSERT_EQ(assigns[0].rows.size(), 1u);
  EXPECT_EQ(assigns[0].rows[0].worker_id, "w2");
  EXPECT_EQ(d.book.links(), (std::vector<LinkId>{7, 8})) << "draining keeps the connection";
}

TEST(RunBook, AnEvictedWorkerIsDisconnectedAndRefusedUntilResumed) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  d.controls.worker_holds["w1"] = "evicted";
  auto e = d.tick(600ms);
  ASSERT_EQ(all<Close>(e).size(), 1u);
  EXPECT_TRUE(d.book.links().empty());
  e = d.attach(9, hello("w1"));
  ASSERT_EQ(sent<protocol::Error>(e).size(), 1u);
  EXPECT_EQ(sent<protocol::Error>(e)[0].code, "worker_evicted");
  EXPECT_TRUE(d.book.links().empty());
  d.controls.worker_holds.clear();
  d.tick(1200ms);
  d.attach(10, hello("w1"));
  EXPECT_EQ(d.book.links(), std::vector<LinkId>{10});
}

store::ScheduledJob hourly_job(std::int64_t last_slot, std::int64_t now_unix) {
  store::ScheduledJob j;
  j.id = 1;
  j.name = "hourly";
  j.schedule = "0 * * * *";
  j.time_zone = "Europe/Berlin";
  j.misfire_policy = "run_latest";
  j.last_slot_unix = last_slot;
  j.now_unix = now_unix;
  j.now_unix_ms = now_unix * 1000;
  return j;
}

// 2026-01-01T00:00Z; the job last fired at 04:00 and it is now 10:20 (UTC):
// 05:00-09:00 are given up under run_latest, 10:00 is caught up.
constexpr std::int64_t kMidnight = 1767225600;

TEST(RunBook, MissedCronSlotsAreRecordedBeforeAnyLaterSlotIsCreated) {
  Driver d;
  d.jobs = {hourly_job(kMidnight + 4 * 3600, kMidnight + 10 * 3600 + 1200)};
  d.start();
  auto first = d.tick(1000ms);
  const auto skips = all<SkipCronSlots>(first);
  ASSERT_EQ(skips.size(), 1u);
  EXPECT_TRUE(all<CreateCronRun>(first).empty()) << "nothing after the gap before it is recorded";
  ASSERT_EQ(skips[0].ranges.size(), 1u);
  EXPECT_EQ(skips[0].ranges[0].first_unix, kMidnight + 5 * 3600);
  EXPECT_EQ(skips[0].ranges[0].last_unix, kMidnight + 9 * 3600);
  EXPECT_EQ(skips[0].ranges[0].count, 5);
  EXPECT_EQ(skips[0].ranges[0].reason, "misfire_policy");
  EXPECT_EQ(skips[0].details_json, R"({"policy":"run_latest","gap_cause":"not_planned"})");
  store::CreateResult ok;
  ok.outcome = store::WriteOutcome::applied;
  ok.current_epoch = kEpoch;
  const auto creates = all<CreateCronRun>(d.answer(skips[0].op, ok));
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].slot_unix, kMidnight + 10 * 3600);
  EXPECT_TRUE(creates[0].caught_up);
}

TEST(RunBook, AFailedSkipRecordCreatesNothingAndAFencedOneStopsTheBook) {
  Driver d;
  d.jobs = {hourly_job(kMidnight + 4 * 3600, kMidnight + 10 * 3600 + 1200)};
  d.start();
  auto skips = all<SkipCronSlots>(d.tick(1000ms));
  ASSERT_EQ(skips.size(), 1u);
  d.book.result(skips[0].op, Result<store::CreateResult>(make_error(Errc::db_unavailable, "down")), d.now);
  EXPECT_TRUE(all<CreateCronRun>(d.run()).empty());

  // The next pass plans the same again; this time the write is fenced.
  skips = all<SkipCronSlots>(d.tick(2000ms));
  ASSERT_EQ(skips.size(), 1u);
  store::CreateResult fenced;
  fenced.outcome = store::WriteOutcome::fenced;
  fenced.current_epoch = Epoch{kEpoch.value + 1};
  EXPECT_TRUE(all<CreateCronRun>(d.answer(skips[0].op, fenced)).empty());
  EXPECT_TRUE(d.book.fenced());
}

// An every-second job last fired at midnight, read 800 ms before its next
// slot; and a create's answer that applied.
store::ScheduledJob every_second_job() {
  store::ScheduledJob j = hourly_job(kMidnight, kMidnight);
  j.name = "every-second";
  j.schedule = "* * * * * *";
  j.time_zone = "UTC";
  j.misfire_policy = "skip";
  j.now_unix_ms = kMidnight * 1000 + 200;
  return j;
}
store::CreateResult created(RunId run) {
  store::CreateResult ok;
  ok.outcome = store::WriteOutcome::applied;
  ok.current_epoch = kEpoch;
  ok.run = run;
  return ok;
}

// A slot created ahead wakes the book at the slot, counted from the read that
// planned it: the creates of a pass run one after another, and counting from
// each create's return made the wake-up late by every create before it.
TEST(RunBook, ACronWakeUpIsCountedFromTheReadNotFromTheCreate) {
  Driver d;
  d.jobs = {every_second_job()};
  d.start();
  auto creates = all<CreateCronRun>(d.tick(1000ms));
  ASSERT_FALSE(creates.empty());
  EXPECT_EQ(creates[0].slot_unix, kMidnight + 1);
  d.now = at(1300ms);  // the create returns 300 ms after the read
  d.answer(creates[0].op, created(RunId{1}));
  ASSERT_TRUE(d.book.next_wakeup().has_value());
  EXPECT_EQ(*d.book.next_wakeup(), at(1000ms + 800ms + 1ms));
}

// baton_cron_slot_delay_seconds (docs/scheduling.md, "Cadence"): a slot's
// run created ahead of its slot is observed 0 late; one whose create
// returned after the slot, by how much (the slot is 800 ms after the read;
// the book counts it from 1 ms after, as it wakes for it).
TEST(RunBook, ACronRunIsObservedAsLateAsItsCreateCameAfterItsSlot) {
  for (auto [answered, late] : {std::pair{1300ms, 0L}, std::pair{2300ms, 499L}}) {
    Driver d;
    d.jobs = {every_second_job()};
    d.start();
    auto creates = all<CreateCronRun>(d.tick(1000ms));
    ASSERT_FALSE(creates.empty());
    d.now = at(answered);
    auto observed = all<ObserveCronSlotDelay>(d.answer(creates[0].op, created(RunId{1})));
    ASSERT_EQ(observed.size(), 1u);
    EXPECT_EQ(observed[0].ms, late);
  }
}

// The next slots' creates (one statement each, about 70 ms for 100 jobs)
// are not begun while a slot is about to come: the slot's starts would wait
// behind them. They are begun once it has passed.
TEST(RunBook, TheCronStepWaitsWhileASlotIsAboutToCome) {
  Driver d;
  d.jobs = {every_second_job()};
  d.start();
  auto creates = all<CreateCronRun>(d.tick(1000ms));
  ASSERT_EQ(creates.size(), 1u);
  d.answer(creates[0].op, created(RunId{1}));
  d.jobs.clear();  // later reads plan nothing (the test counts the reads)
  ASSERT_EQ(d.book.next_wakeup(), std::optional<MonoTime>(at(1801ms)));
  EXPECT_EQ(all<ReadScheduledJobs>(d.tick(1300ms)).size(), 1u) << "the slot is 501 ms away";
  EXPECT_TRUE(all<ReadScheduledJobs>(d.tick(1700ms)).empty()) << "the slot is 101 ms away";
  EXPECT_EQ(all<ReadScheduledJobs>(d.tick(1802ms)).size(), 1u) << "the slot has passed";
}

// 100 every-second jobs appear at once, read 400 ms before their next slot:
// two slots each to create (200 statements, ~150 ms of the loop). No pass
// makes more than its share of them, the coming slot's runs are made first,
// and the later slot's wait while the coming slot is near (it used to be
// made in one go, and the first slot's starts waited behind it: 136 ms).
TEST(RunBook, ManyCronCreatesAreSpreadOverPassesAndLaterSlotsWaitForTheComingOne) {
  Driver d;
  for (int i = 0; i < 100; ++i) {
    auto j = every_second_job();
    j.name = "job-" + std::to_string(i);
    j.now_unix_ms = kMidnight * 1000 + 600;
    d.jobs.push_back(j);
  }
  d.start();
  std::int64_t next_run = 1;
  // One pass at `t`: its creates answered as they come; the slots created.
  auto pass = [&](Millis t) {
    std::vector<std::int64_t> slots;
    auto creates = all<CreateCronRun>(d.tick(t));
    d.jobs.clear();  // read once
    while (!creates.empty()) {
      std::vector<CreateCronRun> more;
      for (const auto& c : creates) {
        slots.push_back(c.slot_unix);
        for (const auto& m : all<CreateCronRun>(d.answer(c.op, created(RunId{next_run++})))) more.push_back(m);
      }
      creates = std::move(more);
    }
    return slots;
  };
  std::vector<std::int64_t> made;
  for (Millis t : {1000ms, 1010ms, 1020ms, 1030ms, 1040ms}) {
    auto slots = pass(t);
    EXPECT_LE(slots.size(), 20u) << "at " << t.count() << " ms";
    made.insert(made.end(), slots.begin(), slots.end());
  }
  ASSERT_EQ(made.size(), 100u);
  EXPECT_EQ(std::count(made.begin(), made.end(), kMidnight + 1), 100) << "the coming slot's runs first";
  EXPECT_TRUE(pass(1300ms).empty()) << "the slot is 101 ms away: the next one's creates wait";
  auto after = pass(1402ms);
  EXPECT_EQ(after.size(), 20u);
  EXPECT_EQ(std::count(after.begin(), after.end(), kMidnight + 2), 20);
  for (Millis t : {1410ms, 1420ms, 1430ms, 1440ms}) EXPECT_EQ(pass(t).size(), 20u);
  EXPECT_TRUE(pass(1450ms).empty()) << "all 200 made";
}

// concurrency_policy replace: the slot's run is created and the runs it
// replaces are canceled through the fenced cancel path (read, then write).
TEST(RunBook, AReplacingSlotCancelsTheRunsItReplaces) {
  Driver d;
  auto job = hourly_job(kMidnight + 9 * 3600, kMidnight + 10 * 3600);
  d.jobs = {job};
  d.start();
  const auto creates = all<CreateCronRun>(d.tick(1000ms));
  ASSERT_EQ(creates.size(), 1u);
  store::CreateResult ok;
  ok.outcome = store::WriteOutcome::applied;
  ok.current_epoch = kEpoch;
  ok.run = RunId{40};
  ok.replaced = {RunId{31}, RunId{32}};
  const auto reads = all<ReadRun>(d.answer(creates[0].op, ok));
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].run, RunId{31});
  EXPECT_EQ(reads[1].run, RunId{32});
  store::RunRow pending;
  pending.id = RunId{31};
  pending.version = Version{2};
  pending.state = RunState::pending;
  const auto writes = all<WriteRun>(d.answer(reads[0].op, std::optional<store::RunRow>{pending}));
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::cancel);
  EXPECT_NE(writes[0].reason.find("replaced by run 40"), std::string::npos) << writes[0].reason;
}

TEST(RunBook, AGapAfterAnOperatorsResumeIsRecordedAsAPause) {
  Driver d;
  auto job = hourly_job(kMidnight + 4 * 3600, kMidnight + 10 * 3600 + 1200);
  job.resumed_at_unix = kMidnight + 10 * 3600 + 1000;
  d.jobs = {job};
  d.start();
  auto skips = all<SkipCronSlots>(d.tick(1000ms));
  ASSERT_EQ(skips.size(), 1u);
  EXPECT_EQ(skips[0].details_json, R"({"policy":"run_latest","gap_cause":"paused"})");
}

// A run whose selector no worker taking runs satisfies is never read as due;
// every few seconds the leader looks for such runs with the label sets of
// its workers and records each once in the decision ledger.
TEST(RunBook, RunsNoWorkerCanTakeAreFoundAndRecordedOnce) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  store::DueRun stuck;
  stuck.id = RunId{77};
  stuck.job_name = "gpu-only";
  d.unmatched = {stuck};
  auto e = d.tick(5000ms);
  auto reads = all<ReadUnmatched>(e);
  ASSERT_EQ(reads.size(), 1u);
  ASSERT_EQ(reads[0].label_sets.size(), 1u) << "w1's labels";
  auto recorded = all<RecordDecision>(e);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].run, RunId{77});
  EXPECT_EQ(recorded[0].decision, "no_worker_matches");
  EXPECT_TRUE(all<RecordDecision>(d.tick(10000ms)).empty()) << "once";
}

// Runs that wait for their key or their rate permits are not read as due;
// every few seconds the leader reads them apart and records each once, with
// what it waits for.
TEST(RunBook, RunsWaitingForTheirKeyOrPermitsAreFoundAndRecordedOnce) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  store::DueRun keyed, rated, roomy;
  keyed.id = RunId{80};
  keyed.job_name = "sync";
  keyed.keyed.concurrency_key = "acme";
  keyed.keyed.key_limit = 2;
  keyed.keyed.key_slots_held = {1, 2};
  rated.id = RunId{81};
  rated.job_name = "report";
  rated.keyed.rate_limit = 1;
  rated.keyed.rate_per_ms = 60000;
  rated.keyed.rate_slots_busy = {1};
  roomy = keyed;
  roomy.id = RunId{82};
  roomy.keyed.key_slots_held = {2};  // a slot came free since the read: nothing to say
  d.key_waits = {keyed, rated, roomy};
  auto e = d.tick(5000ms);
  auto reads = all<ReadWaiting>(e);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_TRUE(reads[0].for_keys);
  auto recorded = all<RecordDecision>(e);
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[0].run, RunId{80});
  EXPECT_EQ(recorded[0].reason, "concurrency_key");
  EXPECT_EQ(recorded[0].details_json, R"({"detail":"waiting: key acme at its limit of 2"})");
  EXPECT_EQ(recorded[1].run, RunId{81});
  EXPECT_EQ(recorded[1].reason, "rate_limit");
  EXPECT_EQ(recorded[1].details_json, R"({"detail":"waiting: job report at its rate limit of 1 per 60000 ms"})");
  EXPECT_TRUE(all<RecordDecision>(d.tick(10000ms)).empty()) << "once";
}

TEST(RunBook, WorkersHeardFromAreRecordedAsSeenEveryFewSeconds) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  d.now = at(4500ms);
  d.msg(7, "w1", protocol::Heartbeat{});
  auto seen = all<RecordWorkersSeen>(d.tick(5000ms));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].worker_ids, std::vector<std::string>{"w1"});
  EXPECT_TRUE(all<RecordWorkersSeen>(d.tick(6000ms)).empty()) << "not again before workers_seen_every";
  EXPECT_TRUE(all<RecordWorkersSeen>(d.tick(10500ms)).empty()) << "w1 was not heard from since";
}

TEST(RunBook, AReattachedWorkersAttemptThatIsNoLongerItsOwnIsCancelled) {
  Driver d;
  auto current = active(1, RunState::running, "w2", 2);
  d.rows = {current};
  d.start();
  protocol::AttemptRef stale{1, 1, "tok-1-1"};
  protocol::AttemptRef unknown{9, 1, "tok-9-1"};
  auto e = d.attach(7, hello("w1", {stale, unknown}));
  ASSERT_EQ(sent<protocol::Welcome>(e).size(), 1u);
  auto cancels = sent<protocol::Cancel>(e);
  ASSERT_EQ(cancels.size(), 2u);
  EXPECT_EQ(cancels[0].ref.run_id, 1);
  EXPECT_EQ(cancels[1].ref.run_id, 9);
  // The welcome comes first: the worker learns the epoch before any cancel.
  auto first = std::find_if(e.begin(), e.end(), [](const Effect& x) { return std::holds_alternative<Send>(x); });
  EXPECT_TRUE(std::holds_alternative<protocol::Welcome>(std::get<Send>(*first).message));
}

TEST(RunBook, AnUnknownRunningAttemptIsNotCancelledOnAFailedRead) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  d.tick(10ms);  // the pass ends: the next judgement needs a new read
  d.fail_reads = true;
  protocol::Heartbeat hb;
  hb.running = {protocol::AttemptRef{9, 1, "tok-9-1"}};
  auto e = d.msg(7, "w1", hb);
  EXPECT_EQ(all<ReadActive>(e).size(), 1u);
  EXPECT_TRUE(sent<protocol::Cancel>(e).empty()) << "a failed read proves nothing about a run";
  d.fail_reads = false;
  e = d.msg(7, "w1", hb);  // judged on a successful read: not this worker's attempt
  EXPECT_EQ(sent<protocol::Cancel>(e).size(), 1u);
}

TEST(RunBook, AdoptedAttemptsAreNamedInTheWelcome) {
  Driver d;
  auto r = active(1, RunState::running, "w1", 1, Epoch{2});
  d.rows = {r};
  d.start();
  d.book.attached(7, hello("w1", {ref(r)}), d.now);
  auto e = d.run();
  EXPECT_TRUE(sent<protocol::Welcome>(e).empty()) << "the welcome waits for the adoption";
  auto writes = all<WriteRun>(e);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::adopt);
  auto welcome = sent<protocol::Welcome>(d.answer(writes[0].op, applied()));
  ASSERT_EQ(welcome.size(), 1u);
  ASSERT_EQ(welcome[0].adopted.size(), 1u);
  EXPECT_EQ(welcome[0].adopted[0].run_id, 1);
}

TEST(RunBook, InsideTheReattachWindowNothingIsReapedForAbsentWorkers) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  d.rows = {r};
  d.start();
  // The reaper runs at 600 ms, inside the first heartbeat interval (1 s).
  for (const auto& w : all<WriteRun>(d.tick(600ms))) EXPECT_NE(w.kind, RunWriteKind::begin_confirming);
  // After the window, the absent worker's attempt goes CONFIRMING.
  auto writes = all<WriteRun>(d.tick(1200ms));
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::begin_confirming);
}

TEST(RunBook, AConfirmingAttemptIsGivenUpOnlyWhenBothDeadlinesPassed) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  r.continuation = ContinuationState::confirming;
  r.continuation_remaining_ms = 2000;
  r.continuation_expired = true;  // the database says so (its clock jumped)...
  d.rows = {r};
  d.start();
  // ... but this leader's own deadline is 2 s + the 10 s margin away.
  for (const auto& w : all<WriteRun>(d.tick(5000ms))) ADD_FAILURE() << "wrote kind " << static_cast<int>(w.kind);
  auto writes = all<WriteRun>(d.tick(12100ms));
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::adopt) << "a CONFIRMING attempt is adopted before it is ended";
  writes = all<WriteRun>(d.answer(writes[0].op, applied()));
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::retry_later);
  EXPECT_EQ(writes[0].finish.error_code, "attempt_lost");
  auto e = d.answer(writes[0].op, applied());
  EXPECT_EQ(sent<protocol::Cancel>(e).size(), 0u) << "its worker is not attached: nothing to send";
}

TEST(RunBook, TheRetryDelayUsesTheJobsBaseAndCap) {
  Driver d;
  auto r = active(1, RunState::running, "w1", 2);  // base 200 ms, cap 300 ms
  d.begin({r}, hello("w1", {ref(r)}));
  d.msg(7, "w1", finish(r, protocol::Outcome::failed));
  auto finishes = all<WriteFinishes>(d.tick(10ms));
  ASSERT_EQ(finishes.size(), 1u);
  ASSERT_TRUE(finishes[0].rows[0].retry_delay.has_value());
  EXPECT_EQ(*finishes[0].rows[0].retry_delay, 300ms) << "attempt 2: 200 ms doubled, capped at 300 ms";
}

TEST(RunBook, ASilentWorkerIsDetachedAfterTheHeartbeatTimeout) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  EXPECT_TRUE(all<Close>(d.tick(4000ms)).empty());
  auto e = d.tick(5100ms);
  auto closes = all<Close>(e);
  ASSERT_EQ(closes.size(), 1u);
  EXPECT_EQ(closes[0].link, 7u);
  EXPECT_EQ(closes[0].reason, "heartbeat_timeout");
  EXPECT_EQ(d.book.attached_workers(), 0u);
}

TEST(RunBook, AWorkerWelcomedIntoALargeFleetGetsAStretchedCadenceAndIsDetachedByIt) {
  auto c = config();
  c.max_heartbeats_per_second = 2;  // two workers fit, a third stretches
  Driver d(c);
  d.start();
  d.attach(7, hello("w1"));
  d.attach(8, hello("w2"));
  auto welcomes = sent<protocol::Welcome>(d.attach(9, hello("w3")));
  ASSERT_EQ(welcomes.size(), 1u);
  EXPECT_EQ(welcomes[0].heartbeat_interval_ms, 1500);
  EXPECT_EQ(welcomes[0].heartbeat_timeout_ms, 7500);
  // w1 and w2 keep the configured 5 s; w3 is heard from and silent after.
  d.now = at(4000ms);
  d.msg(9, "w3", protocol::Heartbeat{});
  auto e = d.tick(5100ms);
  ASSERT_EQ(all<Close>(e).size(), 2u) << "w1 and w2 at their own 5 s";
  EXPECT_TRUE(all<Close>(d.tick(11000ms)).empty()) << "w3 was heard 7 s ago, its timeout is 7.5 s";
  auto late = all<Close>(d.tick(11600ms));
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].link, 9u);
  EXPECT_EQ(late[0].reason, "heartbeat_timeout");
}

// Issue 64, decision 3: a run's stale_after (the baton_stale_runs view) is
// written from its worker's own cadence, the stretched one included. From
// the configured timeout, a stretched worker's live runs would be listed
// stale between its heartbeats.
TEST(RunBook, StaleAfterIsWrittenFromEachWorkersOwnCadence) {
  auto c = config();
  c.max_heartbeats_per_second = 2;  // two workers fit, a third stretches (1.5 s, 7.5 s)
  Driver d(c);
  auto r1 = active(1, RunState::running, "w1"), r2 = active(2, RunState::running, "w2"),
       r3 = active(3, RunState::running, "w3");
  // w1 and w2 full (one slot each, busy); w3 has a free slot and takes the
  // start with its assignments.
  auto h1 = hello("w1", {ref(r1)}), h2 = hello("w2", {ref(r2)});
  h1.capacity = h2.capacity = 1;
  auto h3 = hello_v4("w3", 2);
  h3.running = {ref(r3)};
  d.begin({r1, r2, r3}, h1);
  d.attach(8, h2);
  auto welcome = sent<protocol::Welcome>(d.attach(9, h3));
  ASSERT_EQ(welcome.size(), 1u);
  ASSERT_EQ(welcome[0].heartbeat_timeout_ms, 7500);
  // A start written with its assignment: the worker's timeout and interval.
  d.due = {due_run(5, 3)};
  auto assigns = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  ASSERT_EQ(assigns[0].rows.size(), 1u);
  ASSERT_TRUE(assigns[0].rows[0].start);
  EXPECT_EQ(assigns[0].rows[0].start->worker_instance, "w3-i1");
  EXPECT_EQ(assigns[0].rows[0].start->stale_after, Millis{9000});
  d.due.clear();
  auto result = batch(kEpoch, {5});
  result.applied[5].lease_token = "t5";
  d.answer(assigns[0].op, result);
  protocol::Heartbeat hb1, hb3;
  hb1.running = {ref(r1)};
  hb3.running = {ref(r3)};
  d.msg(7, "w1", hb1);
  d.msg(9, "w3", hb3);
  std::map<std::int64_t, Millis> stale_after;
  for (const auto& beat : all<WriteHeartbeats>(d.tick(1100ms)))
    for (const auto& row : beat.rows) stale_after[row.id.value] = beat.stale_after;
  EXPECT_EQ(stale_after, (std::map<std::int64_t, Millis>{{1, Millis{10000}}, {3, Millis{15000}}}))
      << "twice each worker's own timeout: 5 s configured, 7.5 s stretched";
}

TEST(RunBook, TheRegistryGetsAtMostItsRowBudgetOfHeartbeatsARoundOldestFirst) {
  auto c = config();
  c.workers_seen_rows_per_second = 1;  // 5 rows a round of 5 s
  Driver d(c);
  d.start();
  for (int i = 0; i < 8; ++i) d.attach(static_cast<LinkId>(10 + i), hello("w" + std::to_string(i)));
  d.now = at(4500ms);
  for (int i = 0; i < 8; ++i) d.msg(static_cast<LinkId>(10 + i), "w" + std::to_string(i), protocol::Heartbeat{});
  auto first = all<RecordWorkersSeen>(d.tick(5000ms));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].worker_ids.size(), 5u);
  d.now = at(9500ms);
  for (int i = 0; i < 8; ++i) d.msg(static_cast<LinkId>(10 + i), "w" + std::to_string(i), protocol::Heartbeat{});
  auto second = all<RecordWorkersSeen>(d.tick(10000ms));
  ASSERT_EQ(second.size(), 1u);
  ASSERT_EQ(second[0].worker_ids.size(), 5u);
  // The three left out of the first round come first in the second.
  std::set<std::string> both(first[0].worker_ids.begin(), first[0].worker_ids.end());
  both.insert(second[0].worker_ids.begin(), second[0].worker_ids.end());
  EXPECT_EQ(both.size(), 8u) << "every worker recorded within two rounds";
}

TEST(RunBook, ReadsOfTheActiveRunsAreCoalescedWithinAPass) {
  Driver d;
  d.start();
  d.tick(10ms);  // the start's view is over
  d.attach(7, hello("w1"));
  const int before = d.active_reads;
  d.msg(7, "w1", protocol::Start{protocol::AttemptRef{8, 1, "x"}});
  d.msg(7, "w1", protocol::Start{protocol::AttemptRef{9, 1, "y"}});
  protocol::Heartbeat hb;
  hb.running = {protocol::AttemptRef{10, 1, "z"}};
  d.msg(7, "w1", hb);
  EXPECT_EQ(d.active_reads - before, 0) << "the attach's read serves the whole pass";
}

TEST(RunBook, ACancelAskedWhileTheWorkerWasAwayIsSentWithTheWelcome) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  r.cancel_reason = "operator";
  d.rows = {r};
  d.start();
  auto e = d.attach(7, hello("w1", {ref(r)}));
  auto cancels = sent<protocol::Cancel>(e);
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].reason, "operator");
}

// SPEC 2 and 4: the attempt an operator canceled ends as every attempt
// ends, under its worker's, attempt's and lease token's predicates, with
// what the worker reported of it (recorded as its attempt).
TEST(RunBook, ACanceledAttemptEndsUnderItsPredicatesWithWhatItsWorkerReported) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  r.cancel_reason = "canceled through the API by alice";
  d.begin({r}, hello("w1", {ref(r)}));
  auto killed = finish(r, protocol::Outcome::failed);
  killed.exit_code = 143;
  auto writes = all<WriteRun>(d.msg(7, "w1", killed));
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::cancel_attempt);
  EXPECT_EQ(writes[0].attempt.worker_id, "w1");
  EXPECT_EQ(writes[0].attempt.attempt, r.attempt);
  EXPECT_EQ(writes[0].attempt.lease_token, r.lease_token);
  EXPECT_EQ(writes[0].finish.exit_code, 143);
  EXPECT_EQ(writes[0].reason, "canceled through the API by alice");
  EXPECT_EQ(sent<protocol::FinishAck>(d.answer(writes[0].op, applied())).size(), 1u);
}

// A cancel that finds nothing to cancel is recorded in the decision ledger,
// so the operator's request (audited by the API) has its answer.
TEST(RunBook, ACancelThatCannotApplyIsRecordedAsNotApplied) {
  Driver d;
  d.start();
  d.book.cancel(RunId{9}, "operator", d.now);
  auto reads = all<ReadRun>(d.run());
  ASSERT_EQ(reads.size(), 1u);
  store::RunRow done;
  done.id = RunId{9};
  done.state = RunState::succeeded;
  auto e = d.answer(reads[0].op, std::optional<store::RunRow>{done});
  EXPECT_TRUE(all<WriteRun>(e).empty());
  auto decisions = all<RecordDecision>(e);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].decision, "cancel_not_applied");
  EXPECT_EQ(decisions[0].reason, "already_SUCCEEDED");
}

TEST(RunBook, ADuplicateWorkerIdFromAnotherLiveProcessIsRefused) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  auto other = hello("w1");
  other.instance = "w1-other";
  auto e = d.attach(8, other);
  auto closes = all<Close>(e);
  ASSERT_EQ(closes.size(), 1u);
  EXPECT_EQ(closes[0].link, 8u);
  EXPECT_EQ(sent<protocol::Error>(e).size(), 1u);
  EXPECT_EQ(d.book.links(), std::vector<LinkId>{7});
}

TEST(RunBook, AFinishWhoseWriteDidNotApplyIsJudgedAgainWithoutWaitingForTheWorker) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  d.begin({r}, hello("w1", {ref(r)}));
  d.msg(7, "w1", finish(r, protocol::Outcome::succeeded));
  auto finishes = all<WriteFinishes>(d.tick(10ms));
  ASSERT_EQ(finishes.size(), 1u);
  // The row's version moved (an in-doubt heartbeat): the write does not apply.
  r.version = Version{12};
  d.rows = {r};
  auto e = d.answer(finishes[0].op, batch(kEpoch, {}));
  EXPECT_TRUE(sent<protocol::FinishAck>(e).empty());
  EXPECT_EQ(all<ReadActive>(e).size(), 1u) << "judged again on a fresh read";
  finishes = all<WriteFinishes>(d.tick(20ms));
  ASSERT_EQ(finishes.size(), 1u) << "queued again without a resend from the worker";
  EXPECT_EQ(finishes[0].rows[0].expected_version, Version{12});
  EXPECT_EQ(sent<protocol::FinishAck>(d.answer(finishes[0].op, batch(kEpoch, {1}))).size(), 1u);
}

TEST(RunBook, AConfirmingAttemptItsWorkerListsAsEndedIsAdopted) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  r.continuation = ContinuationState::confirming;
  r.continuation_remaining_ms = 5000;
  d.rows = {r};
  d.start();
  // The worker is back with the attempt ended and its finish not yet written.
  auto h = hello("w1");
  h.finished = {ref(r)};
  auto writes = all<WriteRun>(d.attach(7, h));
  ASSERT_EQ(writes.size(), 1u) << "its deadline must not throw the success away while the worker is here";
  EXPECT_EQ(writes[0].kind, RunWriteKind::adopt);
  // If that write fails, the next heartbeat listing it tries again.
  d.book.result(writes[0].op, Result<store::WriteResult>(make_error(Errc::db_unavailable, "down")), d.now);
  d.run();
  protocol::Heartbeat hb;
  hb.finished = {ref(r)};
  writes = all<WriteRun>(d.msg(7, "w1", hb));
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].kind, RunWriteKind::adopt);
}

TEST(RunBook, StreamedOutputIsLoggedOnlyFromTheWorkerRunningTheAttempt) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  auto other = active(2, RunState::running, "w2");
  d.begin({r, other}, hello("w1"));
  auto e = d.msg(7, "w1", protocol::Output{ref(r), "stdout", 0, "hello\n"});
  auto out = all<AppendRunOutput>(e);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].chunk.run, r.id);
  EXPECT_EQ(out[0].chunk.attempt, 1);
  EXPECT_EQ(out[0].chunk.stream, "stdout");
  EXPECT_EQ(out[0].chunk.data, "hello\n");
  // Another worker's attempt, a superseded attempt, a wrong lease token:
  // dropped, no read, no error.
  EXPECT_TRUE(all<AppendRunOutput>(d.msg(7, "w1", protocol::Output{ref(other), "stdout", 0, "x"})).empty());
  auto stale = ref(r);
  stale.attempt = 2;
  EXPECT_TRUE(all<AppendRunOutput>(d.msg(7, "w1", protocol::Output{stale, "stdout", 0, "x"})).empty());
  stale = ref(r);
  stale.lease_token = "forged";
  e = d.msg(7, "w1", protocol::Output{stale, "stderr", 0, "x"});
  EXPECT_TRUE(all<AppendRunOutput>(e).empty());
  EXPECT_TRUE(all<ReadActive>(e).empty());
  EXPECT_TRUE(sent<protocol::Error>(e).empty());
}

TEST(RunBook, AStreamedFinishPlacesItsTailsByOffsetAndRecordsTheLogRef) {
  RuntimeConfig c = config();
  c.log_archive = true;
  Driver d(c);
  auto r = active(1234567, RunState::running, "w1");
  d.begin({r}, hello("w1"));
  auto f = finish(r, protocol::Outcome::succeeded);
  f.stdout_tail = "end\n";
  f.stdout_bytes = 100;
  f.stderr_bytes = 0;
  auto e = d.msg(7, "w1", f);
  EXPECT_TRUE(all<AppendRunLog>(e).empty()) << "a streamed attempt's tail is not appended again";
  auto out = all<AppendRunOutput>(e);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].chunk.offset, 96);
  EXPECT_EQ(out[0].chunk.data, "end\n");
  auto finishes = all<WriteFinishes>(d.tick(10ms));
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_NE(finishes[0].rows[0].finish.result_json.find(R"("log_ref":"runs/1234/1234567")"), std::string::npos)
      << finishes[0].rows[0].finish.result_json;

  // A worker that did not stream: the tails are appended as before, no log_ref.
  Driver old(c);
  auto r2 = active(5, RunState::running, "w1");
  old.begin({r2}, hello("w1"));
  auto f2 = finish(r2, protocol::Outcome::failed);
  f2.stderr_tail = "boom\n";
  e = old.msg(7, "w1", f2);
  auto logs = all<AppendRunLog>(e);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0].stream, "stderr");
  finishes = all<WriteFinishes>(old.tick(10ms));
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(finishes[0].rows[0].finish.result_json.find("log_ref"), std::string::npos);
}

}  // namespace
}  // namespace baton::leader_core

namespace baton::leader_core {
namespace {

// The start lane: the pass sends what queued before it; starts that arrive
// while that batch is being written go together, as one statement, the
// moment it returns (not at the next pass).
TEST(RunBookLanes, StartsQueuedWhileABatchIsWrittenGoTogetherWhenItReturns) {
  Driver d;
  auto r1 = active(1, RunState::assigned, "w1"), r2 = active(2, RunState::assigned, "w1"),
       r3 = active(3, RunState::assigned, "w1");
  d.begin({r1, r2, r3}, hello("w1"));
  d.msg(7, "w1", protocol::Start{ref(r1)});
  auto first = all<WriteStarts>(d.tick(10ms));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].rows.size(), 1u);
  d.msg(7, "w1", protocol::Start{ref(r2)});
  d.msg(7, "w1", protocol::Start{ref(r3)});
  d.msg(7, "w1", protocol::Start{ref(r2)});  // a repeated start is queued once
  EXPECT_TRUE(all<WriteStarts>(d.tick(20ms)).empty()) << "one batch in flight per lane";
  auto e = d.answer(first[0].op, batch(kEpoch, {1}));
  ASSERT_EQ(sent<protocol::StartGranted>(e).size(), 1u);
  auto next = all<WriteStarts>(e);
  ASSERT_EQ(next.size(), 1u) << "the lane goes on as soon as its statement returned";
  ASSERT_EQ(next[0].rows.size(), 2u);
  EXPECT_EQ(next[0].rows[0].run, RunId{2});
  EXPECT_EQ(next[0].rows[1].run, RunId{3});
  EXPECT_EQ(d.book.outstanding(), 1u);
  EXPECT_EQ(sent<protocol::StartGranted>(d.answer(next[0].op, batch(kEpoch, {2, 3}))).size(), 2u);
}

// The two lanes and the pass do not wait for each other: a finish being
// written holds up neither a start nor the pass's dispatch.
TEST(RunBookLanes, AFinishBeingWrittenHoldsUpNeitherStartsNorThePass) {
  Driver d;
  auto running = active(1, RunState::running, "w1"), assigned = active(2, RunState::assigned, "w1");
  d.begin({running, assigned}, hello("w1", {ref(running)}));
  d.msg(7, "w1", finish(running, protocol::Outcome::succeeded));
  auto finishes = all<WriteFinishes>(d.tick(10ms));
  ASSERT_EQ(finishes.size(), 1u);
  d.msg(7, "w1", protocol::Start{ref(assigned)});
  d.controls.dispatch_enabled = true;
  store::DueRun due;
  due.id = RunId{5};
  due.version = Version{1};
  due.state = RunState::pending;
  due.max_attempts = 3;
  d.due = {due};
  auto e = d.tick(100ms);
  EXPECT_EQ(all<WriteStarts>(e).size(), 1u) << "the start lane did not wait for the finish lane";
  EXPECT_EQ(all<WriteAssigns>(e).size(), 1u) << "dispatch did not wait for the finish lane";
  EXPECT_EQ(sent<protocol::FinishAck>(d.answer(finishes[0].op, batch(kEpoch, {1}))).size(), 1u);
}

// The assignment is written on a lane of its own (ControlLoop's assign
// lane): while it is, every tick still hands the queued starts and finishes
// to their lanes, and the pass's later steps wait for its result.
TEST(RunBookLanes, AnAssignmentBeingWrittenHoldsUpNeitherStartsNorFinishes) {
  Driver d;
  auto running = active(1, RunState::running, "w1"), queued = active(2, RunState::assigned, "w1");
  d.begin({running, queued}, hello("w1", {ref(running)}));
  d.controls.dispatch_enabled = true;
  d.due = {due_run(5, 1)};
  auto assigns = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  d.msg(7, "w1", finish(running, protocol::Outcome::succeeded));
  d.msg(7, "w1", protocol::Start{ref(queued)});
  d.due.clear();
  // Late enough for the controls to be read again in a new pass.
  auto e = d.tick(900ms);
  EXPECT_EQ(all<WriteFinishes>(e).size(), 1u) << "the finish waited for the assignment";
  EXPECT_EQ(all<WriteStarts>(e).size(), 1u) << "the start waited for the assignment";
  EXPECT_TRUE(all<ReadDue>(e).empty()) << "a new pass began before the assignment came back";
  EXPECT_TRUE(all<ReadControls>(e).empty()) << "a new pass began before the assignment came back";
  // Back: the run is the worker's, and the waiting pass ends where it was
  // (no second round of its steps); the next tick begins the next pass.
  e = d.answer(assigns[0].op, assigned(5));
  EXPECT_EQ(sent<protocol::Assign>(e).size(), 1u);
  EXPECT_TRUE(all<ReadControls>(e).empty()) << "the tick meanwhile began a pass of its own";
  EXPECT_EQ(all<ReadControls>(d.tick(5000ms)).size(), 1u);
}

// While a run's finish is being written its worker goes away: the reaper
// leaves the run to the finish's result (no CONFIRMING write that one of the
// two would lose on its version).
TEST(RunBookLanes, TheReaperLeavesARunAloneWhileItsFinishIsBeingWritten) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  d.begin({r}, hello("w1", {ref(r)}));
  d.msg(7, "w1", finish(r, protocol::Outcome::succeeded));
  auto finishes = all<WriteFinishes>(d.tick(10ms));
  ASSERT_EQ(finishes.size(), 1u);
  d.book.detached(7, "w1", "closed", d.now);
  d.run();
  // Past the reattach window and the reap period, with the worker away.
  for (const auto& w : all<WriteRun>(d.tick(1500ms)))
    ADD_FAILURE() << "wrote kind " << static_cast<int>(w.kind) << " while the finish was in flight";
  d.answer(finishes[0].op, batch(kEpoch, {1}));
  d.rows = {};  // the finish applied: the run is no longer active
  for (const auto& w : all<WriteRun>(d.tick(3000ms))) ADD_FAILURE() << "wrote kind " << static_cast<int>(w.kind);
}

// The finish commits, a pass's read no longer lists the run, and only then
// does the batch's answer come back: the attempt is still counted under its
// job (the metric's label was read from the book's copy of the run, which
// that read had already dropped).
TEST(RunBookLanes, AFinishIsCountedUnderItsJobWhenAReadDroppedTheRunBeforeItsAnswer) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  r.job_name = "breaks";
  d.begin({r}, hello("w1", {ref(r)}));
  d.msg(7, "w1", finish(r, protocol::Outcome::failed));
  auto finishes = all<WriteFinishes>(d.tick(10ms));
  ASSERT_EQ(finishes.size(), 1u);
  d.rows = {};  // committed, and the next pass's read sees it
  const int before = d.active_reads;
  d.tick(full_read_period() + 100ms);  // the reaper's periodic read
  ASSERT_GT(d.active_reads, before) << "no read between the write and its answer";
  auto observed = all<ObserveRunFinished>(d.answer(finishes[0].op, batch(kEpoch, {1})));
  ASSERT_EQ(observed.size(), 1u);
  EXPECT_EQ(observed[0].job, "breaks");
  EXPECT_EQ(observed[0].outcome, "FAILED");
}

// Prefetch: a worker is assigned up to its capacity plus its prefetch; one
// without prefetch only up to its capacity.
TEST(RunBookPrefetch, AWorkerIsAssignedItsCapacityPlusItsPrefetch) {
  for (int prefetch : {0, 2}) {
    Driver d;
    d.start();
    auto h = hello("w1");
    h.prefetch = prefetch;
    d.attach(7, h);
    for (std::int64_t id = 1; id <= 10; ++id) {
      store::DueRun due;
      due.id = RunId{id};
      d.due.push_back(due);
    }
    auto assigns = all<WriteAssigns>(d.tick(100ms));
    ASSERT_EQ(assigns.size(), 1u);
    EXPECT_EQ(assigns[0].rows.size(), static_cast<std::size_t>(4 + prefetch)) << "prefetch " << prefetch;
  }
}

// A run its attached worker lists as held is requeued after reassign_after,
// not orphaned (which would count against the run); one it does not list is
// orphaned as before.
TEST(RunBookPrefetch, ARunHeldInAQueueTooLongIsRequeuedAndOneNotHeldIsOrphaned) {
  Driver d;
  auto held = active(1, RunState::assigned, "w1");
  auto lost = active(2, RunState::assigned, "w1");
  held.assigned_age_ms = lost.assigned_age_ms = RuntimeConfig{}.reassign_after.count();
  d.begin({held, lost}, hello("w1"));
  protocol::Heartbeat hb;
  hb.assigned = {ref(held)};
  std::map<std::int64_t, std::vector<RunWriteKind>> kinds;
  for (Millis t : {1100ms, 2200ms, 3300ms}) {
    d.msg(7, "w1", hb);
    for (const auto& w : all<WriteRun>(d.tick(t))) kinds[w.fence.run.value].push_back(w.kind);
  }
  EXPECT_EQ(kinds[1], std::vector<RunWriteKind>{RunWriteKind::requeue});
  EXPECT_EQ(kinds[2], std::vector<RunWriteKind>{RunWriteKind::orphan});
}

// A triggered run handed over as its insert returned it is assigned at once:
// no read of the due runs, no pass, and (as for any assignment) nothing is
// sent before the write applied.
TEST(RunBookCreated, ARunHandedOverIsAssignedWithoutAReadOrAPass) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  d.tick(100ms);  // the first pass reads the controls
  const store::DueRun due = due_run(9, 1);
  d.book.created({due}, d.now);
  auto e = d.run();
  EXPECT_TRUE(all<ReadDue>(e).empty());
  auto assigns = all<WriteAssigns>(e);
  ASSERT_EQ(assigns.size(), 1u);
  ASSERT_EQ(assigns[0].rows.size(), 1u);
  EXPECT_EQ(assigns[0].rows[0].run.value, 9);
  EXPECT_EQ(assigns[0].rows[0].worker_id, "w1");
  EXPECT_TRUE(sent<protocol::Assign>(e).empty());
  auto msgs = sent<protocol::Assign>(d.answer(assigns[0].op, assigned(9)));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].ref.run_id, 9);
}

// Before the controls are known, while dispatch is disabled, and while a
// pass's read is outstanding, a handed-over run waits for the dispatcher's
// own read (the view of the fleet's room is not whole, or dispatch is off).
TEST(RunBookCreated, ARunHandedOverWaitsForTheDispatcherWhenItCannotBePlacedNow) {
  const store::DueRun due = due_run(9, 1);
  {
    Driver d;
    d.start();
    d.attach(7, hello("w1"));
    d.book.created({due}, d.now);  // no controls read yet
    EXPECT_TRUE(all<WriteAssigns>(d.run()).empty());
  }
  {
    Driver d;
    d.controls.dispatch_enabled = false;
    d.start();
    d.attach(7, hello("w1"));
    d.tick(100ms);
    d.book.created({due}, d.now);
    EXPECT_TRUE(all<WriteAssigns>(d.run()).empty());
  }
  {
    Driver d;
    d.start();
    d.attach(7, hello("w1"));
    d.tick(100ms);
    d.now = at(full_read_period());
    d.msg(7, "w1", protocol::Heartbeat{});  // still attached
    d.now = at(full_read_period() + 200ms);
    d.book.tick(d.now);  // a pass that reads the active runs (the reaper's periodic read)...
    auto pass = d.book.take_effects();
    ASSERT_FALSE(all<ReadActive>(pass).empty());
    d.book.created({due}, d.now);  // ...is under way
    EXPECT_TRUE(all<WriteAssigns>(d.book.take_effects()).empty());
    d.due = {due};
    for (auto& r : all<ReadActive>(pass)) d.book.result(r.op, Result<std::vector<store::ActiveRun>>(d.rows), d.now);
    auto e = d.run();
    auto assigns = all<WriteAssigns>(e);
    ASSERT_EQ(assigns.size(), 1u) << "the pass's own dispatch places it";
    EXPECT_EQ(assigns[0].rows[0].run.value, 9);
    EXPECT_EQ(all<ReadDue>(e).size(), 1u);
  }
}

// Issue 64, decision 1: every due read carries the label sets of the
// workers that take runs, busy ones included and draining ones not: the
// store drains the cluster for an exclusive run only while one of them
// matches it (store/tests/exclusive_gate_store_test.cpp).
TEST(RunBook, ADueReadNamesTheLabelSetsOfEveryWorkerTakingRuns) {
  Driver d;
  auto busy_run = active(1, RunState::running, "busy");
  auto busy = hello("busy", {ref(busy_run)});
  busy.capacity = 1;
  busy.labels = {{"pool", "maint"}};
  d.begin({busy_run}, busy);
  auto free = hello("free");
  free.labels = {{"pool", "plain"}};
  d.attach(8, free);
  auto leaving = hello("leaving");
  leaving.labels = {{"pool", "leaving"}};
  d.attach(9, leaving);
  d.msg(9, "leaving", protocol::Drain{});
  auto reads = all<ReadDue>(d.tick(100ms));
  ASSERT_EQ(reads.size(), 1u) << "one free label set: the plain one";
  EXPECT_EQ(reads[0].labels, (std::map<std::string, std::string>{{"pool", "plain"}}));
  EXPECT_EQ(reads[0].taking,
            (std::vector<std::map<std::string, std::string>>{{{"pool", "maint"}}, {{"pool", "plain"}}}))
      << "the busy maint worker counts, the draining one does not";
}

// A run read ahead of its time (assign_ahead) is assigned at once, and the
// start its worker asks for is written only when the time has come: the
// book wakes then, and the start goes out in that pass.
TEST(RunBookCreated, ARunAssignedAheadOfItsTimeHasItsStartWrittenAtTheTime) {
  RuntimeConfig c = config();
  c.reap_every = Millis{10};  // every pass reads the active runs
  Driver d(c);
  d.start();
  d.attach(7, hello("w1"));
  const store::DueRun due = due_run(5, 1, 200);
  d.due = {due};
  auto e = d.tick(100ms);
  auto reads = all<ReadDue>(e);
  ASSERT_FALSE(reads.empty());
  EXPECT_EQ(reads[0].ahead, config().assign_ahead);
  auto assigns = all<WriteAssigns>(e);
  ASSERT_EQ(assigns.size(), 1u);
  auto msgs = sent<protocol::Assign>(d.answer(assigns[0].op, assigned(5)));
  ASSERT_EQ(msgs.size(), 1u);
  d.due.clear();
  store::ActiveRun read = active(5, RunState::assigned, "w1");
  read.version = Version{2};
  read.lease_token = "t5";
  d.rows = {read};  // what the reaper's reads find from now on

  // The reaper's read of the active runs before the start is asked for
  // keeps the hold.
  const int reads_before = d.active_reads;
  e = d.tick(111ms);
  EXPECT_GT(d.active_reads, reads_before);
  d.now = at(115ms);
  e = d.msg(7, "w1", protocol::Start{msgs[0].ref});
  e = d.tick(150ms);
  EXPECT_TRUE(all<WriteStarts>(e).empty()) << "not before its time";
  ASSERT_TRUE(d.book.next_wakeup().has_value());
  EXPECT_EQ(*d.book.next_wakeup(), at(100ms + 200ms + 1ms));
  e = d.msg(7, "w1", protocol::Start{msgs[0].ref});  // asked again: still one start
  e = d.tick(301ms);
  auto starts = all<WriteStarts>(e);
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(starts[0].rows.size(), 1u);
  EXPECT_EQ(starts[0].rows[0].run.value, 5);
}

// A start held for its run's time whose worker left meanwhile is not
// written when the time comes: the run stays ASSIGNED (for the reaper).
TEST(RunBookCreated, AHeldStartWhoseWorkerLeftIsNotWritten) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  const store::DueRun due = due_run(5, 1, 200);
  d.due = {due};
  auto assigns = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  auto msgs = sent<protocol::Assign>(d.answer(assigns[0].op, assigned(5)));
  ASSERT_EQ(msgs.size(), 1u);
  d.due.clear();
  d.now = at(110ms);
  d.msg(7, "w1", protocol::Start{msgs[0].ref});
  d.book.detached(7, "w1", "closed", d.now);
  d.run();
  EXPECT_TRUE(all<WriteStarts>(d.tick(301ms)).empty());
}

// Between elections the book is authoritative for what it wrote: the
// reaper ages the book's own assignment on the leader's clock and orphans it
// (its worker gone) without reading the active runs first.
TEST(RunBookAuthority, TheReaperAgesTheBooksOwnAssignmentOnItsClockWithoutAReadOfTheActiveRuns) {
  Driver d;
  d.start();
  auto h = hello("w1");
  h.prefetch = 0;
  d.attach(7, h);
  d.tick(100ms);  // the first pass reads the controls
  d.book.created({due_run(9, 1)}, d.now);
  auto assigns = all<WriteAssigns>(d.run());
  ASSERT_EQ(assigns.size(), 1u);
  d.answer(assigns[0].op, assigned(9));
  d.book.detached(7, "w1", "closed", d.now);
  d.run();
  const int reads = d.active_reads;
  std::vector<WriteRun> orphans;
  for (Millis t : {600ms, 1100ms, 1600ms})
    for (const auto& w : all<WriteRun>(d.tick(t)))
      if (w.kind == RunWriteKind::orphan) {
        orphans.push_back(w);
        d.answer(w.op, applied());
      }
  ASSERT_EQ(orphans.size(), 1u) << "ASSIGNED, its worker gone for reassign_detached_after";
  EXPECT_EQ(orphans[0].fence.run.value, 9);
  EXPECT_EQ(d.active_reads, reads) << "decided on the book, not on a read";
  // The backstop: a full read comes at least every full_read_every_reaps reaps.
  d.tick(full_read_period() + 1700ms);
  EXPECT_GT(d.active_reads, reads);
}

// SPEC 6: the progress a worker reports for an attempt it holds goes with
// that run's next heartbeat write, once; a progress for an attempt the
// worker does not hold is dropped.
TEST(RunBook, ProgressGoesWithTheNextHeartbeatWriteOfTheAttemptsRun) {
  Driver d;
  auto r = active(1, RunState::running, "w1");
  d.begin({r}, hello("w1", {ref(r)}));
  protocol::Heartbeat hb;
  hb.running = {ref(r)};
  protocol::AttemptRef replaced = ref(r);
  replaced.lease_token = "an earlier attempt's token";
  hb.progress = {{ref(r), "2/3 tables"}, {replaced, "not this attempt's"}};
  d.msg(7, "w1", hb);
  auto beats = all<WriteHeartbeats>(d.tick(1100ms));
  ASSERT_EQ(beats.size(), 1u);
  ASSERT_EQ(beats[0].rows.size(), 1u);
  EXPECT_EQ(beats[0].rows[0].id, RunId{1});
  EXPECT_EQ(beats[0].rows[0].progress, std::optional<std::string>("2/3 tables"));
  store::HeartbeatBatchResult written;
  written.current_epoch = kEpoch;
  written.applied[1] = Version{12};
  d.answer(beats[0].op, written);
  // Written: the next heartbeat write does not carry it again.
  protocol::Heartbeat again;
  again.running = {ref(r)};
  d.msg(7, "w1", again);
  auto next = all<WriteHeartbeats>(d.tick(2200ms));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_FALSE(next[0].rows[0].progress);
}

// A heartbeat write that missed a run the book itself finished meanwhile
// needs no read; one that missed a run the book did not move does.
TEST(RunBookAuthority, AHeartbeatMissIsReadOnlyWhenTheBookDidNotMoveTheRun) {
  for (bool book_finished_it : {true, false}) {
    Driver d;
    auto r = active(1, RunState::running, "w1");
    d.begin({r}, hello("w1", {ref(r)}));
    protocol::Heartbeat hb;
    hb.running = {ref(r)};
    d.msg(7, "w1", hb);
    auto flush = d.tick(1100ms);
    auto beats = all<WriteHeartbeats>(flush);
    ASSERT_EQ(beats.size(), 1u);
    ASSERT_EQ(beats[0].rows.size(), 1u);
    if (book_finished_it) {
      d.msg(7, "w1", finish(r, protocol::Outcome::succeeded));
      auto finishes = all<WriteFinishes>(d.tick(1110ms));
      ASSERT_EQ(finishes.size(), 1u);
      d.answer(finishes[0].op, batch(kEpoch, {1}));
    }
    const int reads = d.active_reads;
    store::HeartbeatBatchResult missed;
    missed.current_epoch = kEpoch;  // nothing applied
    d.answer(beats[0].op, missed);
    EXPECT_EQ(d.active_reads - reads, book_finished_it ? 0 : 1) << (book_finished_it ? "finished" : "not moved");
  }
}

}  // namespace
}  // namespace baton::leader_core
