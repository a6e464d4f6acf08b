// The control loop's shell, with the book inside it and fake stores around
// it: a slow periodic read runs on the read lane and holds nothing else up.
// The loop has threads of its own (it is the shell), so this test runs it
// for real against a real clock with bounded waits.
#include "baton/leader/control_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "baton/store_fake/fake_lease_store.h"
#include "baton/store_fake/fake_run_store.h"

namespace baton::leader {
namespace {

using namespace std::chrono_literals;

/// A latch a test opens; waits on it are bounded.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }
  bool wait_open(std::chrono::milliseconds max) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, max, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

/// An empty database for the loop: no active runs, no jobs, no controls
/// set. With `hold_due_reads`, each due_runs call waits until `release`
/// opens (at most 10 s), the way a read walking dead index entries does.
class QuietLeaderStore final : public store::LeaderStore {
 public:
  explicit QuietLeaderStore(bool hold_due_reads) : hold_(hold_due_reads) {}

  Gate entered;  ///< a due read began
  Gate release;  ///< due reads may return
  std::atomic<bool> in_due_read{false};
  std::atomic<int> due_reads{0};

  Result<std::vector<store::DueRun>> due_runs(int, const std::map<std::string, std::string>&, Millis,
                                              const std::vector<std::map<std::string, std::string>>&) override {
    ++due_reads;
    if (hold_) {
      in_due_read = true;
      entered.open();
      release.wait_open(10s);
      in_due_read = false;
    }
    return std::vector<store::DueRun>{};
  }
  Result<std::vector<store::ActiveRun>> active_runs(Millis) override { return std::vector<store::ActiveRun>{}; }
  Result<store::HeartbeatBatchResult> heartbeat_batch(Epoch, const std::vector<store::HeartbeatRow>&, Millis) override {
    return unused();
  }
  Result<store::CreateResult> create_cron_run(Epoch, const std::string&, std::int64_t, bool, std::int64_t) override {
    return unused();
  }
  Result<store::CreateResult> skip_cron_slots(Epoch, const std::string&, const std::vector<store::SkippedCronSlots>&,
                                              const std::string&) override {
    return unused();
  }
  Result<store::EventsProcessed> process_events(Epoch epoch, int) override {
    return store::EventsProcessed{epoch, 0, 0};
  }
  Result<store::Pruned> prune(Epoch epoch, int) override { return store::Pruned{epoch, 0, 0, 0, 0}; }
  Result<store::SubmissionsProcessed> process_submissions(Epoch epoch, int, const std::vector<std::string>&) override {
    return store::SubmissionsProcessed{epoch, 0, 0, 0};
  }
  Result<bool> await_inbox(Millis) override { return false; }
  Result<store::CreateResult> record_decision(Epoch, RunId, const std::string&, const std::string&,
                                              const std::string&) override {
    return unused();
  }
  Result<void> record_fenced_out(Epoch, const std::string&, const std::vector<store::FencedOut>&) override {
    return {};
  }
  Result<void> worker_attached(const std::string&, const std::string&, int, const std::string&, Epoch) override {
    return {};
  }
  Result<void> worker_detached(const std::string&, const std::string&, Epoch) override { return {}; }
  Result<void> workers_seen(const std::vector<std::string>&) override { return {}; }
  Result<void> append_run_log(RunId, int, const std::string&, const std::string&) override { return {}; }
  Result<void> append_run_output(const std::vector<store::OutputChunk>&, std::int64_t) override { return {}; }
  Result<std::vector<store::ScheduledJob>> scheduled_jobs() override { return std::vector<store::ScheduledJob>{}; }
  Result<std::vector<store::DueRun>> unmatched_runs(const std::vector<std::map<std::string, std::string>>&,
                                                    int) override {
    return std::vector<store::DueRun>{};
  }
  Result<std::vector<store::DueRun>> waiting_runs(int) override { return std::vector<store::DueRun>{}; }
  Result<store::Controls> read_controls() override { return store::Controls{}; }

 private:
  static Error unused() { return make_error(Errc::db_error, "not in this test"); }
  const bool hold_;
};

/// A worker connection that keeps what the loop sent it.
class RecordingLink final : public WorkerLink {
 public:
  explicit RecordingLink(std::uint64_t id) : id_(id) {}
  void send(const protocol::Message& m) override {
    {
      std::lock_guard lock(mutex_);
      if (std::holds_alternative<protocol::Welcome>(m)) welcomed_ = true;
    }
    changed_.notify_all();
  }
  void close(const std::string&) override {}
  std::uint64_t id() const override { return id_; }
  bool wait_welcome(std::chrono::milliseconds max) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, max, [&] { return welcomed_; });
  }

 private:
  const std::uint64_t id_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool welcomed_ = false;
};

protocol::Hello hello_of(const std::string& worker) {
  protocol::Hello h;
  h.worker_id = worker;
  h.capacity = 4;
  h.instance = worker + "-process";
  return h;
}

TEST(ControlLoop, ASlowDueReadHoldsUpNeitherTheLoopNorItsOtherReads) {
  RealClock clock;
  store::fake::FakeLeaseDb lease(clock);
  store::fake::FakeRunDb db(lease, clock);
  store::fake::FakeRunStore main(db), assigns(db), starts(db), finishes(db);
  QuietLeaderStore store(false), reads(true);
  service::NodeMetrics metrics;
  RuntimeConfig cfg;
  cfg.dispatch_every = Millis{10};
  ControlLoop loop(Epoch{1}, NodeIdentity{"n1", "i1", "127.0.0.1:1"}, cfg, RunLanes{main, assigns, starts, finishes},
                   store, reads, clock, metrics);
  std::atomic<bool> stop{false};
  std::thread thread([&] { loop.run(stop); });

  // A worker with free slots: the next pass reads the runs due for it.
  auto first = std::make_shared<RecordingLink>(1);
  loop.post(WorkerAttached{first, hello_of("w1")});
  ASSERT_TRUE(first->wait_welcome(5s)) << "the first worker was never welcomed";
  ASSERT_TRUE(reads.entered.wait_open(5s)) << "no due read began";

  // While that read is held, the loop still takes a worker in: it reads
  // the active runs on its own thread and welcomes it. On the loop thread,
  // the due read would hold the welcome until it returned.
  auto second = std::make_shared<RecordingLink>(2);
  loop.post(WorkerAttached{second, hello_of("w2")});
  const bool welcomed = second->wait_welcome(2s);
  const bool read_still_held = reads.in_due_read.load();
  reads.release.open();
  stop = true;
  thread.join();

  EXPECT_TRUE(welcomed) << "the second worker waited for the due read";
  EXPECT_TRUE(read_still_held) << "the due read returned before the check: the test proved nothing";
  EXPECT_EQ(store.due_reads.load(), 0) << "a due read ran on the loop's own connection";
  EXPECT_FALSE(loop.fenced());
}

}  // namespace
}  // namespace baton::leader
