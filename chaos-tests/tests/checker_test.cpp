// The checker on hand-made histories: clean ones pass with the right counts,
// and each kind of violation is found with evidence.
#include "baton/chaos/checker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace baton::chaos;
namespace fs = std::filesystem;

namespace {

const std::int64_t T = 1'800'000'000'000'000;  // a wall time in microseconds
const std::int64_t S = T / 1'000'000;          // the same in seconds

struct History {
  std::string dir = "/tmp/baton-checker-test-" + std::to_string(::getpid());
  History() {
    fs::remove_all(dir);
    for (auto d : {"journals", "logs", "db"}) fs::create_directories(dir + "/" + d);
    std::ofstream(dir + "/window.txt") << "start_us=" << T << " end_us=" << T + 10'000'000
                                       << " cron_job=cron faults=kill9_worker\n";
    std::ofstream(dir + "/nemesis.log") << "t_us=" << T + 1 << " phase=inject fault=kill9_worker target=w2\n"
                                        << "t_us=" << T + 2 << " phase=heal fault=kill9_worker target=w2\n";
    // Cron slots S .. S+5 (the checker examines slots up to end - 5 s), one API key.
    std::ofstream runs(dir + "/db/runs.csv");
    for (int i = 0; i <= 5; ++i) runs << i + 1 << ",cron,SUCCEEDED,1,," << S + i << "," << T + i * 1'000'000 << "\n";
    runs << "10,api,SUCCEEDED,2,k1,0," << T + 100 << "\n";
    std::ofstream(dir + "/submissions.log") << "key=k1 job=api accepted=1 status=201 run=10\n";
    std::ofstream(dir + "/db/epochs.csv") << "1,n1,i1," << T << "\n2,n2,i2," << T + 5'000'000 << "\n";
    std::ofstream(dir + "/db/transitions.csv")
        << "10,\"\",PENDING,1," << T + 100 << "\n10,PENDING,ASSIGNED,1," << T + 200 << "\n"
        << "10,ASSIGNED,RUNNING,1," << T + 300 << "\n10,RUNNING,RETRY_WAITING,1," << T + 400 << "\n"
        << "10,RETRY_WAITING,ASSIGNED,2," << T + 6'000'000 << "\n10,ASSIGNED,RUNNING,2," << T + 6'100'000 << "\n"
        << "10,RUNNING,SUCCEEDED,2," << T + 7'000'000 << "\n";
    std::ofstream(dir + "/logs/n1.1.log")
        << "x info [n1] role_change node=n1 incarnation=i1 from=follower to=leader epoch=1 reason=elected\n";
    std::ofstream(dir + "/logs/n2.1.log")
        << "x info [n2] role_change node=n2 incarnation=i2 from=follower to=leader epoch=2 reason=elected\n";
    // Attempt 1 on w2 dies with its worker (kill at T+1... after its start), attempt 2 on w1 later.
    std::ofstream(dir + "/journals/w1.log")
        << "start run=10 attempt=2 token=b pid=200 mono_ns=1 wall_us=" << T + 6'100'000
        << "\nexit run=10 attempt=2 token=b pid=200 mono_ns=2 wall_us=" << T + 7'000'000 << "\n";
    std::ofstream(dir + "/journals/w2.log")
        << "start run=10 attempt=1 token=a pid=100 mono_ns=1 wall_us=" << T - 5 << "\n";
  }
  ~History() { fs::remove_all(dir); }
  const InvariantResult& get(const Report& r, const std::string& name) {
    for (const auto& i : r.invariants)
      if (i.name == name) return i;
    throw std::runtime_error("no invariant " + name);
  }
};

}  // namespace

TEST(Checker, CleanHistoryPassesWithCounts) {
  History h;
  auto r = check_history(h.dir);
  EXPECT_TRUE(r.ok()) << r.markdown();
  EXPECT_EQ(h.get(r, "no_overlapping_attempts").examined, 1);
  EXPECT_EQ(h.get(r, "no_stale_epoch_writes").examined, 4);  // the epoch-1 writes
  EXPECT_EQ(h.get(r, "one_leader_per_epoch").examined, 2);
  EXPECT_EQ(h.get(r, "cron_slots_complete").examined, 6);  // slots S..S+5 (up to window end - 5 s)
  EXPECT_EQ(h.get(r, "idempotency_keys_once").examined, 1);
  EXPECT_EQ(h.get(r, "legal_transitions").examined, 7);
  EXPECT_EQ(r.faults.at("kill9_worker"), 1);
  EXPECT_NE(r.json().find("\"ok\":true"), std::string::npos);
}

TEST(Checker, FindsEachKindOfViolation) {
  History h;
  // An overlapping second attempt, a stale-epoch write after epoch 2, an
  // illegal transition, a missing cron slot, a duplicated key, a stuck run.
  std::ofstream(h.dir + "/journals/w3.log")
      << "start run=10 attempt=3 token=c pid=300 mono_ns=1 wall_us=" << T + 6'500'000
      << "\nexit run=10 attempt=3 token=c pid=300 mono_ns=2 wall_us=" << T + 6'600'000 << "\n";
  std::ofstream(h.dir + "/db/transitions.csv", std::ios::app)
      << "11,RUNNING,SUCCEEDED,1," << T + 5'500'000 << "\n11,SUCCEEDED,RUNNING,2," << T + 8'000'000 << "\n";
  std::ofstream runs(h.dir + "/db/runs.csv");
  for (int i : {0, 2, 3, 4, 5}) runs << i + 1 << ",cron,SUCCEEDED,1,," << S + i << "," << T + i * 1'000'000 << "\n";
  runs << "10,api,SUCCEEDED,2,k1,0," << T + 100 << "\n11,api,RUNNING,1,k1,0," << T + 200 << "\n";
  runs.close();
  std::ofstream(h.dir + "/window.txt") << "start_us=" << T << " end_us=" << T + 12'000'000
                                       << " cron_job=cron faults=kill9_worker,pg_restart\n";
  auto r = check_history(h.dir);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(h.get(r, "no_overlapping_attempts").violations, 1) << r.markdown();
  EXPECT_EQ(h.get(r, "no_stale_epoch_writes").violations, 1) << r.markdown();
  EXPECT_EQ(h.get(r, "legal_transitions").violations, 1) << r.markdown();
  EXPECT_GE(h.get(r, "cron_slots_complete").violations, 1) << r.markdown();
  EXPECT_EQ(h.get(r, "idempotency_keys_once").violations, 1) << r.markdown();
  EXPECT_EQ(h.get(r, "quiescent").violations, 1) << r.markdown();
  EXPECT_EQ(h.get(r, "fault_coverage").violations, 1) << "pg_restart was asked for and never injected";
  EXPECT_NE(r.markdown().find("overlaps attempt"), std::string::npos);
  EXPECT_NE(r.json().find("\"ok\":false"), std::string::npos);
}
