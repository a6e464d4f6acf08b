// Randomised stress of the fence (SPEC section 4): several writer threads
// send fenced assignments carrying epochs that are stale or about to become
// stale, in each form production sends them (the single-row `assign`, the
// batched `run_assign_batch`, and the batch whose rows carry the start
// grant, `run_assign_start_batch`: PENDING -> ASSIGNED -> RUNNING in one
// write), while another thread runs election after election. Afterwards
// the database's own commit timestamps are checked: no write of epoch e
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

TEST(FenceStress, NoStaleEpochWriteCommitsAfterTheElectionThatSupersededIt) {
  const int writes_total = 20000;
  const int writers = 4;
  std::string url = baton::testing::PgInstance::shared().fresh_database("stress");
  std::atomic<std::int64_t> current{force_election(url, "e0").value};
  const std::int64_t first_run = insert_pending_runs(url, writes_total);
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("ANALYZE job_runs");
  }

  std::atomic<int> next{0};
  std::atomic<bool> writers_done{false};
  std::atomic<int> applied{0}, fenced{0}, conflict{0}, errors{0}, known_stale_applied{0}, granted{0};
  std::atomic<int> elections{0};

  std::thread elector([&] {
    PgLeaseStore lease(url, "stress-elector");
    pqxx::connection c(url);
    std::mt19937 rng(7);
    for (int i = 1; !writers_done.load(); ++i) {
      {
        pqxx::nontransaction tx(c);
        tx.exec("UPDATE leader_lease SET released = true");
      }
      auto r = lease.campaign(node("e" + std::to_string(i)), Millis{60000});
      ASSERT_TRUE(r && r->won);
      current.store(r->lease.epoch.value);
      elections++;
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    }
  });

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
        std::int64_t seen = current.load();
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
  writers_done = true;
  elector.join();

  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  auto v = tx.exec1("SELECT count(*), count(*) FILTER (WHERE " + commit_ts_sql("t.xid") +
                    " >= " + commit_ts_sql("h.election_xid") +
                    ") FROM job_run_transitions t JOIN epoch_history h ON h.epoch = t.leader_epoch + 1"
                    " WHERE t.to_state IN ('ASSIGNED', 'RUNNING')");
  const auto examined = v[0].as<std::int64_t>();
  const auto violations = v[1].as<std::int64_t>();
  // The offending pairs with both commit times: a write that committed
  // well after the election is a broken fence; one within microseconds of
  // it (or before it by the clock) would point at the timestamps (wall
  // clock, read on different CPUs) rather than at the locks.
  if (violations > 0) {
    auto rows = tx.exec("SELECT t.run_id, t.leader_epoch, " + commit_ts_sql("t.xid") + "::text, " +
                        commit_ts_sql("h.election_xid") + "::text, (extract(epoch FROM " + commit_ts_sql("t.xid") +
                        " - " + commit_ts_sql("h.election_xid") +
                        ") * 1000000)::bigint FROM job_run_transitions t JOIN epoch_history h ON h.epoch = "
                        "t.leader_epoch + 1 WHERE t.to_state IN ('ASSIGNED', 'RUNNING') AND " +
                        commit_ts_sql("t.xid") + " >= " + commit_ts_sql("h.election_xid") + " LIMIT 5");
    for (const auto& r : rows)
      std::printf("stale write: run=%s epoch=%s committed=%s election_of_next_epoch=%s after_us=%s\n", r[0].c_str(),
                  r[1].c_str(), r[2].c_str(), r[3].c_str(), r[4].c_str());
  }
  const auto assigned_rows =
      tx.exec1("SELECT count(*) FROM job_runs WHERE state IN ('ASSIGNED', 'RUNNING')")[0].as<std::int64_t>();
  const auto running_rows = tx.exec1("SELECT count(*) FROM job_runs WHERE state = 'RUNNING'")[0].as<std::int64_t>();
  std::printf(
      "writes=%d applied=%d (started with the assignment %d) fenced=%d conflict=%d errors=%d elections=%d "
      "examined=%lld violations=%lld\n",
      writes_total, applied.load(), granted.load(), fenced.load(), conflict.load(), errors.load(), elections.load(),
      static_cast<long long>(examined), static_cast<long long>(violations));

  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(applied + fenced + conflict, writes_total);
  EXPECT_EQ(known_stale_applied.load(), 0) << "a write with an already superseded epoch committed";
  EXPECT_EQ(violations, 0) << "a stale-epoch write committed after the election that superseded it";
  EXPECT_EQ(assigned_rows, applied.load()) << "return codes must match what the database holds";
  EXPECT_EQ(running_rows, granted.load()) << "a granted row is RUNNING, a plain one ASSIGNED";
  EXPECT_GT(granted.load(), 100) << "the assignments that carry the start must race the elections too";
  EXPECT_GE(fenced.load(), 10000) << "the stress must race at least 10,000 stale-epoch writes";
  EXPECT_GT(elections.load(), 100);
  // Writes whose epoch was superseded by an election that committed after
  // them: the races the fence exists for must actually have happened.
  EXPECT_GT(examined, 100);
}
