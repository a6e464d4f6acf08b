// Randomised stress of the fence (SPEC section 4): several writer threads
// send fenced assignments carrying epochs that are stale or about to become
// stale, in each form production sends them (the single-row `assign`, the
// batched `run_assign_batch`, and the batch whose rows carry the start
// grant, `run_assign_start_batch`: PENDING -> ASSIGNED -> RUNNING in one
// write), and the batched starts and finishes the leader's lanes send,
// while another thread runs election after election. Afterwards the
// database's own commit timestamps are checked: no write of epoch e
// committed after the election of e+1 committed.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

/// Election after election on its own thread (each releases the lease and
/// campaigns as a new node), until stopped.
class ElectionStorm {
 public:
  explicit ElectionStorm(const std::string& url)
      : url_(url), current_(force_election(url, "e0").value), thread_([this] { run(); }) {}
  ~ElectionStorm() { stop(); }
  std::int64_t current() const { return current_.load(); }
  int elections() const { return elections_.load(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    PgLeaseStore lease(url_, "stress-elector");
    pqxx::connection c(url_);
    std::mt19937 rng(7);
    for (int i = 1; !stop_.load(); ++i) {
      {
        pqxx::nontransaction tx(c);
        tx.exec("UPDATE leader_lease SET released = true");
      }
      auto r = lease.campaign(node("e" + std::to_string(i)), Millis{60000});
      ASSERT_TRUE(r && r->won);
      current_.store(r->lease.epoch.value);
      elections_++;
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    }
  }

  std::string url_;
  std::atomic<std::int64_t> current_;
  std::atomic<int> elections_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;  ///< last: starts once the rest is set
};

struct FenceCheck {
  std::int64_t examined = 0;    ///< writes of epoch e whose e+1 election exists
  std::int64_t violations = 0;  ///< of those, committed at or after that election
};

/// Judges every recorded transition into `states` (an SQL list) by the
/// database's commit timestamps; prints the first offenders.
FenceCheck check_fence(const std::string& url, const std::string& states) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  const std::string late = commit_ts_sql("t.xid") + " >= " + commit_ts_sql("h.election_xid");
  const std::string from =
      " FROM job_run_transitions t JOIN epoch_history h ON h.epoch = t.leader_epoch + 1 WHERE t.to_state IN (" +
      states + ")";
  auto v = tx.exec1("SELECT count(*), count(*) FILTER (WHERE " + late + ")" + from);
  FenceCheck f{v[0].as<std::int64_t>(), v[1].as<std::int64_t>()};
  // The offending pairs with both commit times: a write that committed
  // well after the election is a broken fence; one within microseconds of
  // it (or before it by the clock) would point at the timestamps (wall
  // clock, read on different CPUs) rather than at the locks.
  if (f.violations > 0) {
    auto rows =
        tx.exec("SELECT t.run_id, t.to_state, t.leader_epoch, " + commit_ts_sql("t.xid") + "::text, " +
                commit_ts_sql("h.election_xid") + "::text, (extract(epoch FROM " + commit_ts_sql("t.xid") + " - " +
                commit_ts_sql("h.election_xid") + ") * 1000000)::bigint" + from + " AND " + late + " LIMIT 5");
    for (const auto& r : rows)
      std::printf("stale write: run=%s to=%s epoch=%s committed=%s election_of_next_epoch=%s after_us=%s\n",
                  r[0].c_str(), r[1].c_str(), r[2].c_str(), r[3].c_str(), r[4].c_str(), r[5].c_str());
  }
  return f;
}

void analyze(const std::string& url) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  tx.exec("ANALYZE job_runs");
}

std::int64_t count_rows(const std::string& url, const std::string& where) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  return tx.exec1("SELECT count(*) FROM job_runs WHERE " + where)[0].as<std::int64_t>();
}

}  // namespace

TEST(FenceStress, NoStaleEpochWriteCommitsAfterTheElectionThatSupersededIt) {
  const int writes_total = 20000;
  const int writers = 4;
  std::string url = baton::testing::PgInstance::shared().fresh_database("stress");
  const std::int64_t first_run = insert_pending_runs(url, writes_total);
  analyze(url);
  ElectionStorm storm(url);

  std::atomic<int> next{0};
  std::atomic<int> applied{0}, fenced{0}, conflict{0}, errors{0}, known_stale_applied{0}, granted{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      PgRunStore store(url, "stress-writer-" + std::to_string(w));
      std::mt19937 rng(100 + w);
      for (;;) {
        // A third of the writes single rows, a third batches, a third
        // batches whose rows carry the start.
        const int form = static_cast<int>(rng() % 3);
        const int rows = form == 0 ? 1 : 1 + static_cast<int>(rng() % 8);
        const int i = next.fetch_add(rows);
        if (i >= writes_total) break;
        const int n = std::min(rows, writes_total - i);
        // Half the writes use the epoch just read (racing the next election),
        // half one already superseded (must never commit).
        std::int64_t seen = storm.current();
        bool known_stale = (rng() % 2) == 0 && seen > 1;
        Epoch e{known_stale ? seen - 1 : seen};
        if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
        const std::string worker = "w" + std::to_string(w);
        if (form == 0) {
          auto r = store.assign({RunId{first_run + i}, Version{1}, e}, worker);
          if (!r) {
            errors++;
            continue;
          }
          if (r->outcome == WriteOutcome::applied) {
            applied++;
            if (known_stale) known_stale_applied++;
          } else if (r->outcome == WriteOutcome::fenced) {
            fenced++;
          } else {
            conflict++;
          }
          continue;
        }
        std::vector<AssignRow> batch;
        for (int k = 0; k < n; ++k) {
          batch.push_back({RunId{first_run + i + k}, Version{1}, RunState::pending, worker});
          if (form == 2) batch.back().start = StartGrant{worker + "-i", Millis{5000}};
        }
        auto r = store.assign_batch(e, batch);
        if (!r) {
          errors += n;
          continue;
        }
        if (r->fenced(e)) {
          fenced += n;
          continue;
        }
        const int written = static_cast<int>(r->applied.size());
        applied += written;
        conflict += n - written;
        if (form == 2) granted += written;
        if (known_stale) known_stale_applied += written;
      }
    });
  }
  for (auto& t : threads) t.join();
  storm.stop();

  const FenceCheck check = check_fence(url, "'ASSIGNED', 'RUNNING'");
  const auto assigned_rows = count_rows(url, "state IN ('ASSIGNED', 'RUNNING')");
  const auto running_rows = count_rows(url, "state = 'RUNNING'");
  std::printf(
      "writes=%d applied=%d (started with the assignment %d) fenced=%d conflict=%d errors=%d elections=%d "
      "examined=%lld violations=%lld\n",
      writes_total, applied.load(), granted.load(), fenced.load(), conflict.load(), errors.load(), storm.elections(),
      static_cast<long long>(check.examined), static_cast<long long>(check.violations));

  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(applied + fenced + conflict, writes_total);
  EXPECT_EQ(known_stale_applied.load(), 0) << "a write with an already superseded epoch committed";
  EXPECT_EQ(check.violations, 0) << "a stale-epoch write committed after the election that superseded it";
  EXPECT_EQ(assigned_rows, applied.load()) << "return codes must match what the database holds";
  EXPECT_EQ(running_rows, granted.load()) << "a granted row is RUNNING, a plain one ASSIGNED";
  EXPECT_GT(granted.load(), 100) << "the assignments that carry the start must race the elections too";
  EXPECT_GE(fenced.load(), 10000) << "the stress must race at least 10,000 stale-epoch writes";
  EXPECT_GT(storm.elections(), 100);
  // Writes whose epoch was superseded by an election that committed after
  // them: the races the fence exists for must actually have happened.
  EXPECT_GT(check.examined, 100);
}

// The lanes that follow an assignment: batched starts (ASSIGNED -> RUNNING)
// and batched finishes (RUNNING -> SUCCEEDED), each sent with the epoch just
// read or one already superseded, and retried with a newer epoch when
// fenced, as the leader's start and finish lanes would be by the next
// leader, while elections race them; a run started under an earlier epoch
// is adopted before its finish, as a new leader does at the welcome.
TEST(FenceStress, BatchedStartsAndFinishesAreFencedToo) {
  const int runs_total = 8000;
  const int writers = 4;
  const int tries_max = 40;
  std::string url = baton::testing::PgInstance::shared().fresh_database("stress_lanes");
  const std::int64_t first_run = insert_pending_runs(url, runs_total);
  analyze(url);
  // Every run ASSIGNED before the storm: the races below are the other lanes'.
  std::vector<WriteResult> assigned(runs_total);
  {
    const Epoch setup = force_election(url, "setup");
    PgRunStore store(url, "stress-setup");
    for (int i = 0; i < runs_total; i += 500) {
      std::vector<AssignRow> batch;
      for (int k = i; k < std::min(i + 500, runs_total); ++k)
        batch.push_back({RunId{first_run + k}, Version{1}, RunState::pending, "w"});
      auto r = store.assign_batch(setup, batch);
      ASSERT_TRUE(r && !r->fenced(setup));
      ASSERT_EQ(r->applied.size(), batch.size());
      for (const auto& [id, wr] : r->applied) assigned[static_cast<std::size_t>(id - first_run)] = wr;
    }
  }
  ElectionStorm storm(url);

  std::atomic<int> next{0};
  std::atomic<int> started{0}, finished{0}, fenced_starts{0}, fenced_finishes{0}, conflicts{0}, errors{0},
      known_stale_applied{0}, gave_up{0}, adopted{0}, fenced_adopts{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      PgRunStore store(url, "stress-lane-" + std::to_string(w));
      std::mt19937 rng(200 + w);
      // Half the tries use the epoch just read (racing the next election),
      // half one already superseded (must never commit).
      auto pick_epoch = [&](bool& known_stale) {
        const std::int64_t seen = storm.current();
        known_stale = (rng() % 2) == 0 && seen > 1;
        if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
        return Epoch{known_stale ? seen - 1 : seen};
      };
      for (;;) {
        const int n = 1 + static_cast<int>(rng() % 8);
        const int i = next.fetch_add(n);
        if (i >= runs_total) break;
        std::vector<StartRow> starts;
        for (int k = i; k < std::min(i + n, runs_total); ++k) {
          const WriteResult& a = assigned[static_cast<std::size_t>(k)];
          starts.push_back({RunId{first_run + k}, a.new_version, AttemptFence{"w", a.attempt, a.lease_token}, "w-i"});
        }
        std::vector<FinishRow> finishes;
        for (int t = 0; t < tries_max && !starts.empty(); ++t) {
          bool stale = false;
          const Epoch e = pick_epoch(stale);
          auto r = store.start_batch(e, starts, Millis{60000});
          if (!r) {
            errors++;
            continue;
          }
          if (r->fenced(e)) {
            fenced_starts += static_cast<int>(starts.size());
            continue;
          }
          for (const auto& row : starts) {
            auto it = r->applied.find(row.run.value);
            if (it == r->applied.end()) {
              conflicts++;
              continue;
            }
            started++;
            if (stale) known_stale_applied++;
            finishes.push_back({row.run, it->second.new_version, row.attempt, Finish{}, std::nullopt});
          }
          starts.clear();
        }
        if (!starts.empty()) gave_up += static_cast<int>(starts.size());
        for (int t = 0; t < tries_max && !finishes.empty(); ++t) {
          bool stale = false;
          const Epoch e = pick_epoch(stale);
          auto r = store.finish_batch(e, finishes);
          if (!r) {
            errors++;
            continue;
          }
          if (r->fenced(e)) {
            fenced_finishes += static_cast<int>(finishes.size());
            continue;
          }
          const int written = static_cast<int>(r->applied.size());
          finished += written;
          if (stale) known_stale_applied += written;
          // A leader finishes only runs of its own epoch: one started under
          // an earlier leader is adopted first (as at its worker's welcome),
          // a single-row write that races the elections as well.
          std::vector<FinishRow> left;
          for (auto& row : finishes) {
            if (r->applied.count(row.run.value)) continue;
            auto a = store.adopt({row.run, row.expected_version, e}, row.attempt);
            if (!a) {
              errors++;
            } else if (a->outcome == WriteOutcome::applied) {
              adopted++;
              if (stale) known_stale_applied++;
              row.expected_version = a->new_version;
            } else if (a->outcome == WriteOutcome::fenced) {
              fenced_adopts++;
            } else {
              conflicts++;
              continue;
            }
            left.push_back(row);
          }
          finishes = std::move(left);
        }
        if (!finishes.empty()) gave_up += static_cast<int>(finishes.size());
      }
    });
  }
  for (auto& t : threads) t.join();
  storm.stop();

  // Adoption re-stamps a RUNNING run (to RUNNING): judged with the rest.
  const FenceCheck check = check_fence(url, "'RUNNING', 'SUCCEEDED'");
  const auto running_rows = count_rows(url, "state = 'RUNNING'");
  const auto succeeded_rows = count_rows(url, "state = 'SUCCEEDED'");
  std::printf(
      "runs=%d started=%d adopted=%d finished=%d fenced starts=%d adopts=%d finishes=%d conflicts=%d errors=%d "
      "gave_up=%d elections=%d examined=%lld violations=%lld\n",
      runs_total, started.load(), adopted.load(), finished.load(), fenced_starts.load(), fenced_adopts.load(),
      fenced_finishes.load(), conflicts.load(), errors.load(), gave_up.load(), storm.elections(),
      static_cast<long long>(check.examined), static_cast<long long>(check.violations));

  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(conflicts.load(), 0) << "each row is written by one lane, with the version its last write returned";
  EXPECT_EQ(known_stale_applied.load(), 0) << "a write with an already superseded epoch committed";
  EXPECT_EQ(check.violations, 0) << "a stale-epoch start or finish committed after the election that superseded it";
  EXPECT_EQ(succeeded_rows, finished.load()) << "return codes must match what the database holds";
  EXPECT_EQ(running_rows, started.load() - finished.load());
  EXPECT_GE(fenced_starts.load(), 1000) << "the starts must race stale epochs";
  EXPECT_GE(fenced_finishes.load(), 1000) << "the finishes must race stale epochs";
  EXPECT_GT(adopted.load(), 100) << "runs started under one leader must be finished under another too";
  EXPECT_GT(storm.elections(), 100);
  EXPECT_GT(check.examined, 100);
}
