// The book's store effects as calls: every effect is either a store call
// (with the lane and statement name the control loop logs) or the shell's
// own, and a call runs the statement its effect asks for, so a book driven
// through call_of alone moves runs in the database. The simulator and the
// control loop both carry effects out through call_of.
#include "baton/store_calls/store_call.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <variant>

#include "baton/store_fake/fake_leader_store.h"
#include "baton/store_fake/fake_lease_store.h"
#include "baton/store_fake/fake_run_store.h"
#include "baton/testing/fake_clock.h"

namespace baton::store_calls {
namespace {

namespace lc = leader_core;
using namespace std::chrono_literals;

struct Database {
  testing::FakeClock clock;
  store::fake::FakeLeaseDb lease{clock};
  store::fake::FakeRunDb db{lease, clock};
  store::fake::FakeRunStore runs{db};
  store::fake::FakeLeaderStore leader{db};
  Stores stores{runs, runs, runs, runs, leader, leader};
};

/// Each alternative of lc::Effect, default-constructed.
template <std::size_t... I>
std::vector<lc::Effect> every_effect(std::index_sequence<I...>) {
  return {lc::Effect{std::in_place_index<I>}...};
}

TEST(StoreCall, EveryEffectIsAStoreCallOnItsLaneOrTheShellsOwn) {
  Database d;
  const std::map<std::string, Lane> expected = {
      {"worker_registry", Lane::loop}, {"workers_seen", Lane::loop},     {"append_run_log", Lane::loop},
      {"active_runs", Lane::loop},     {"run_read", Lane::loop},         {"due_runs", Lane::reads},
      {"scheduled_jobs", Lane::reads}, {"read_controls", Lane::reads},   {"waiting_runs", Lane::reads},
      {"unmatched_runs", Lane::reads}, {"run_write", Lane::loop},        {"assign_batch", Lane::assigns},
      {"start_batch", Lane::starts},   {"finish_batch", Lane::finishes}, {"heartbeat_batch", Lane::loop},
      {"create_cron_run", Lane::loop}, {"skip_cron_slots", Lane::loop},  {"record_decision", Lane::loop},
      {"prune", Lane::loop},           {"process_events", Lane::loop},   {"process_submissions", Lane::loop},
  };
  std::set<std::string> seen;
  int shells_own = 0;
  for (lc::Effect e : every_effect(std::make_index_sequence<std::variant_size_v<lc::Effect>>{})) {
    auto call = call_of(e, d.stores, Epoch{1}, "n1");
    if (!call) {
      ++shells_own;
      EXPECT_FALSE(lc::is_external(e) && !std::holds_alternative<lc::Send>(e) && !std::holds_alternative<lc::Close>(e))
          << "effect #" << e.index() << " writes the database but has no store call";
      continue;
    }
    ASSERT_TRUE(expected.contains(call->statement)) << call->statement;
    EXPECT_EQ(call->lane, expected.at(call->statement)) << call->statement;
    EXPECT_TRUE(seen.insert(call->statement).second) << "two effects share " << call->statement;
  }
  EXPECT_EQ(seen.size(), expected.size());
  // Send, Close, Log, Count, the three observations, AppendRunOutput.
  EXPECT_EQ(shells_own, 8);
}

/// Carries out every effect the book has through call_of, each call at once
/// and its result fed straight back; counts the assignments sent.
int drain(lc::RunBook& book, Database& d) {
  int assigns_sent = 0;
  while (book.has_effects())
    for (lc::Effect& e : book.take_effects()) {
      if (auto* send = std::get_if<lc::Send>(&e))
        assigns_sent += std::holds_alternative<protocol::Assign>(send->message);
      auto call = call_of(e, d.stores, book.epoch(), "n1");
      if (!call) continue;
      Returned r = call->run();
      if (r.deliver) r.deliver(book, d.clock.mono(), 0ms);
    }
  return assigns_sent;
}

TEST(StoreCall, ABookDrivenThroughItsCallsAssignsRunsInTheDatabase) {
  Database d;
  const auto won = d.lease.campaign(NodeIdentity{"n1", "i1", "127.0.0.1:1"}, 10s);
  ASSERT_TRUE(won.won);
  const Epoch epoch = won.lease.epoch;
  std::vector<RunId> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(d.db.create_run(epoch, store::NewRun{}).run);

  lc::RunBook book(epoch, "n1", lc::RuntimeConfig{}, 1, d.clock.mono());
  book.start(d.clock.mono());
  drain(book, d);
  protocol::Hello hello;
  hello.worker_id = "w1";
  hello.capacity = 4;
  hello.instance = "w1-i1";
  book.attached(1, hello, d.clock.mono());
  int sent = drain(book, d);
  for (int i = 0; i < 20 && sent < 3; ++i) {
    d.clock.advance(100ms);
    book.tick(d.clock.mono());
    sent += drain(book, d);
  }
  EXPECT_EQ(sent, 3) << "the book never heard that its assignment committed";
  for (RunId id : runs) {
    const store::fake::FakeRun& r = d.db.runs().at(id.value);
    EXPECT_NE(r.state, RunState::pending) << "run " << id.value << " was never assigned in the database";
    EXPECT_EQ(r.worker.value_or(""), "w1");
    EXPECT_EQ(r.leader_epoch, epoch);
  }
}

TEST(StoreCall, ABestEffortCallThatFailedSaysWhatToLog) {
  Database d;
  d.leader.unavailable = true;
  lc::Effect e = lc::RecordWorker{"w\"1", true, "{}", 4};
  auto call = call_of(e, d.stores, Epoch{1}, "n1");
  ASSERT_TRUE(call);
  Returned r = call->run();
  EXPECT_FALSE(r.deliver) << "the book waits for no registry write";
  EXPECT_NE(r.failure.find("worker_registry_error worker=\"w\\\"1\""), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("partition"), std::string::npos) << r.failure;
}

TEST(StoreCall, AReadSaysHowManyRowsItReturned) {
  Database d;
  const Epoch epoch = d.lease.campaign(NodeIdentity{"n1", "i1", "127.0.0.1:1"}, 10s).lease.epoch;
  for (int i = 0; i < 5; ++i) d.db.create_run(epoch, store::NewRun{});
  lc::Effect e = lc::ReadDue{7, 3, {}, 0ms, {}};
  auto call = call_of(e, d.stores, epoch, "n1");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->run().rows, 3u);
}

}  // namespace
}  // namespace baton::store_calls
