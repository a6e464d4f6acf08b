// The checker on hand-made histories. A clean history passes with non-zero
// counts; then each invariant is shown failing on the smallest history that
// breaks it (each of these passed the checker before it had the invariant).
#include "baton/checker/checker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "baton/checker/faults.h"
#include "baton/checker/history.h"

using namespace baton::checker;
namespace fs = std::filesystem;

namespace {

const std::int64_t T = 1'800'000'000'000'000;  // wall time of the window start, µs
const std::int64_t S = T / 1'000'000;          // the same in seconds
const std::int64_t M0 = 100'000'000'000;       // monotonic time of the window start, ns
constexpr std::int64_t sec = 1'000'000;        // µs

std::int64_t mono(std::int64_t wall_us) { return M0 + (wall_us - T) * 1000; }

/// A clean history: 3 s... 20 s window, cron slots S..S+15 each run once,
/// one API run whose first attempt died with its worker (kill9_worker), was
/// confirmed for the full continuation window and retried elsewhere, and a
/// paused leader superseded by another node.
struct Fixture {
  std::string dir = "/tmp/baton-checker-test-" + std::to_string(::getpid());
  std::ostringstream evidence, runs, transitions, attempts, dead, probes, nemesis, epochs, ledger;
  /// Job definitions (db/jobs.jsonl): the cron job may run one at a time.
  std::string jobs = R"({"name":"cron","max_instances":1,"concurrency_policy":"allow","exclusive_execution":false})"
                     "\n"
                     R"({"name":"evt","max_instances":null,"concurrency_policy":"allow","exclusive_execution":false,)"
                     R"("on_events":["tick"]})"
                     "\n";
  std::ostringstream events;  ///< db/events.jsonl
  std::string submissions = "key=k1 job=api accepted=1 status=201 run=100\n";
  std::int64_t log_id = 0;
  std::string faults = "kill9_worker,pause_leader";

  Fixture() {
    fs::remove_all(dir);
    nemesis << line("inject", "kill9_worker", "w2", T + 1 * sec) << line("effect", "kill9_worker", "w2", T + 1 * sec)
            << line("heal", "kill9_worker", "w2", T + 2 * sec) << line("inject", "pause_leader", "n1", T + 5 * sec)
            << line("effect", "pause_leader", "n1", T + 5 * sec) << line("heal", "pause_leader", "n1", T + 9 * sec);
    epoch(1, "n1", "i1", T - sec);
    epoch(2, "n2", "i2", T + 8 * sec);
    for (std::int64_t t = T; t <= T + 20 * sec; t += 200'000) {
      const bool paused = t >= T + 5 * sec && t < T + 9 * sec;
      const bool n2_leads = t >= T + 8 * sec;
      probe(t, "n1", !paused, n2_leads ? "follower" : "leader", n2_leads ? 2 : 1);
      probe(t, "n2", true, n2_leads ? "leader" : "follower", n2_leads ? 2 : 1);
    }
    for (int i = 0; i <= 15; ++i) simple_run(i + 1, "cron", "", S + i, "w1", T + i * sec + 100'000, i < 7 ? 1 : 2);
    // Run 100 (key k1): attempt 1 on w2 dies with its worker at +1 s.
    run(100, "api", "SUCCEEDED", "k1", 0, 2, 3);
    tr(100, "", "PENDING", {}, 1, 1, 1, T + 100'000);
    tr(100, "PENDING", "ASSIGNED", 1, 2, 1, 1, T + 200'000);
    tr(100, "ASSIGNED", "RUNNING", 2, 3, 1, 1, T + 300'000);
    exec(100, 1, "a", "w2", 500, T + 400'000, T + 1 * sec, std::nullopt);
    tr(100, "RUNNING", "RUNNING", 3, 4, 1, 1, T + 2'500'000, "CONFIRMING");
    tr(100, "RUNNING", "RETRY_WAITING", 4, 5, 1, 2, T + 9'000'000);  // 6.5 s later: continuation 4 s + margin 2 s
    tr(100, "RETRY_WAITING", "ASSIGNED", 5, 6, 2, 2, T + 9'500'000);
    tr(100, "ASSIGNED", "RUNNING", 6, 7, 2, 2, T + 9'600'000);
    exec(100, 2, "b", "w1", 600, T + 9'700'000, T + 10'500'000, 0);
    tr(100, "RUNNING", "SUCCEEDED", 7, 8, 2, 2, T + 10'600'000);
    attempt(100, 1, "w2", "FAILED", "a");
    attempt(100, 2, "w1", "SUCCEEDED", "b");
    // Event e1 (kind tick) was accepted, processed, and made run 60 of `evt`.
    simple_run(60, "evt", "", 0, "w2", T + 11 * sec, 2, 1);
    events << R"({"id":1,"kind":"tick","dedupe_key":"e1","processed":true})"
           << "\n";
    submissions += "event=e1 accepted=1 status=201\n";
  }
  ~Fixture() { fs::remove_all(dir); }

  static std::string line(const std::string& phase, const std::string& fault, const std::string& target,
                          std::int64_t t) {
    return "t_us=" + std::to_string(t) + " mono_ns=" + std::to_string(mono(t)) + " phase=" + phase + " fault=" + fault +
           " target=" + target + "\n";
  }
  void epoch(int e, const std::string& node, const std::string& inc, std::optional<std::int64_t> commit) {
    epochs << "{\"epoch\":" << e << ",\"node\":\"" << node << "\",\"incarnation\":\"" << inc
           << "\",\"commit_us\":" << (commit ? std::to_string(*commit) : "null") << "}\n";
  }
  /// One /status answer; the leader it names is the fixture's holder of
  /// `epoch` (n1 for 1, n2 for 2) unless given.
  void probe(std::int64_t t, const std::string& node, bool up, const std::string& role, int epoch,
             std::string leader = "") {
    if (leader.empty()) leader = epoch == 1 ? "n1" : epoch == 2 ? "n2" : "";
    probes << "mono_ns=" << mono(t) << " t_us=" << t << " node=" << node << " up=" << (up ? 1 : 0)
           << " role=" << (up ? role : "") << " epoch=" << (up ? epoch : 0) << " leader=" << (up ? leader : "") << "\n";
  }
  void run(std::int64_t id, const std::string& job, const std::string& state, const std::string& key, std::int64_t slot,
           int attempt, int max_attempts, std::int64_t event_id = 0, std::int64_t created_us = T + 50) {
    runs << "{\"id\":" << id << ",\"job\":\"" << job << "\",\"state\":\"" << state
         << "\",\"key\":" << (key.empty() ? "null" : "\"" + key + "\"") << ",\"attempt\":" << attempt
         << ",\"max_attempts\":" << max_attempts << ",\"slot\":" << slot << ",\"created_us\":" << created_us
         << ",\"event_id\":" << event_id << "}\n";
  }
  void tr(std::int64_t r, const std::string& from, const std::string& to, std::optional<std::int64_t> from_v,
          std::int64_t to_v, int attempt, int epoch, std::optional<std::int64_t> commit,
          const std::string& continuation = "NONE", std::optional<std::int64_t> continuation_ms = std::nullopt) {
    transitions << "{\"id\":" << ++log_id << ",\"run\":" << r
                << ",\"from\":" << (from.empty() ? "null" : "\"" + from + "\"") << ",\"to\":\"" << to
                << "\",\"from_version\":" << (from_v ? std::to_string(*from_v) : "null") << ",\"to_version\":" << to_v
                << ",\"attempt\":" << attempt << ",\"epoch\":" << epoch << ",\"continuation\":\"" << continuation
                << "\",\"commit_us\":" << (commit ? std::to_string(*commit) : "null")
                << ",\"continuation_ms\":" << (continuation_ms ? std::to_string(*continuation_ms) : "null") << "}\n";
  }
  void attempt(std::int64_t r, int a, const std::string& worker, const std::string& outcome, const std::string& token) {
    attempts << "{\"run\":" << r << ",\"attempt\":" << a << ",\"worker\":\"" << worker << "\",\"outcome\":\"" << outcome
             << "\",\"token\":\"" << token << "\"}\n";
  }
  /// One task process (role main unless root given): start, alive ticks, and
  /// an exit line with `status` unless it was killed (nullopt).
  void process(std::int64_t r, int a, const std::string& token, const std::string& worker, int pid, int pstart,
               std::int64_t from, std::int64_t to, std::optional<int> status, int root_pid = 0, int root_pstart = 0,
               const std::string& role = "main") {
    if (!root_pid) {
      root_pid = pid;
      root_pstart = pstart;
    }
    auto ev = [&](const char* e, std::int64_t t, const std::string& extra) {
      evidence << "{\"ev\":\"" << e << "\",\"run\":" << r << ",\"attempt\":" << a << ",\"token\":\"" << token
               << "\",\"pid\":" << pid << ",\"pstart\":" << pstart << ",\"pgid\":" << pid << ",\"ppid\":1,\"role\":\""
               << role << "\",\"root_pid\":" << root_pid << ",\"root_pstart\":" << root_pstart << ",\"worker\":\""
               << worker << "\",\"mono_ns\":" << mono(t) << ",\"wall_us\":" << t << extra << "}\n";
    };
    ev("start", from, "");
    for (std::int64_t t = from + 100'000; t < to; t += 100'000) ev("alive", t, "");
    ev(status ? "exit" : "alive", to, status ? ",\"status\":" + std::to_string(*status) : "");
  }
  void exec(std::int64_t r, int a, const std::string& token, const std::string& worker, int pid, std::int64_t from,
            std::int64_t to, std::optional<int> status) {
    process(r, a, token, worker, pid, pid * 10, from, to, status);
  }
  /// A decision-ledger entry (db/ledger.jsonl).
  void decision(const std::string& job, const std::string& what, const std::string& reason, std::int64_t slot,
                std::int64_t slot_last, std::optional<std::int64_t> run_id, int epoch) {
    ledger << "{\"job\":\"" << job << "\",\"decision\":\"" << what << "\",\"reason\":\"" << reason
           << "\",\"slot\":" << slot << ",\"slot_last\":" << slot_last
           << ",\"run\":" << (run_id ? std::to_string(*run_id) : "null") << ",\"epoch\":" << epoch << "}\n";
  }
  /// A run that went PENDING -> ASSIGNED -> RUNNING -> SUCCEEDED at attempt 1.
  void simple_run(std::int64_t id, const std::string& job, const std::string& key, std::int64_t slot,
                  const std::string& worker, std::int64_t at, int epoch, std::int64_t event_id = 0) {
    run(id, job, "SUCCEEDED", key, slot, 1, 3, event_id);
    if (slot > 0) decision(job, "created", "on_time", slot, slot, id, epoch);
    tr(id, "", "PENDING", {}, 1, 1, epoch, at);
    tr(id, "PENDING", "ASSIGNED", 1, 2, 1, epoch, at + 1000);
    tr(id, "ASSIGNED", "RUNNING", 2, 3, 1, epoch, at + 2000);
    exec(id, 1, "t" + std::to_string(id), worker, static_cast<int>(1000 + id), at + 3000, at + 50'000, 0);
    tr(id, "RUNNING", "SUCCEEDED", 3, 4, 1, epoch, at + 60'000);
    attempt(id, 1, worker, "SUCCEEDED", "t" + std::to_string(id));
  }

  Report check() {
    for (auto d : {"db", "evidence", "outbox"}) fs::create_directories(dir + "/" + d);
    std::ofstream(dir + "/window.txt") << "start_us=" << T << " end_us=" << T + 20 * sec << " start_mono_ns=" << M0
                                       << " end_mono_ns=" << mono(T + 20 * sec) << " cron_job=cron faults=" << faults
                                       << " continuation_ms=4000 continuation_margin_ms=2000 lease_ms=3000"
                                       << " poll_ms=300\n";
    std::ofstream(dir + "/nemesis.log") << nemesis.str();
    std::ofstream(dir + "/probes.log") << probes.str();
    std::ofstream(dir + "/submissions.log") << submissions;
    std::ofstream(dir + "/evidence/tasks.jsonl") << evidence.str();
    std::ofstream(dir + "/db/runs.jsonl") << runs.str();
    std::ofstream(dir + "/db/transitions.jsonl") << transitions.str();
    std::ofstream(dir + "/db/epochs.jsonl") << epochs.str();
    std::ofstream(dir + "/db/attempts.jsonl") << attempts.str();
    std::ofstream(dir + "/db/dead_letters.jsonl") << dead.str();
    std::ofstream(dir + "/db/ledger.jsonl") << ledger.str();
    std::ofstream(dir + "/db/jobs.jsonl") << jobs;
    std::ofstream(dir + "/db/events.jsonl") << events.str();
    return check_history(dir);
  }
  static const InvariantResult& get(const Report& r, const std::string& name) {
    for (const auto& i : r.invariants)
      if (i.name == name) return i;
    throw std::runtime_error("no invariant " + name);
  }
  static std::int64_t violations(const Report& r, const std::string& name) { return get(r, name).violations; }
};

}  // namespace

TEST(Checker, CleanHistoryPassesWithNonZeroCounts) {
  Fixture f;
  auto r = f.check();
  EXPECT_TRUE(r.ok()) << r.markdown();
  EXPECT_EQ(Fixture::get(r, "no_overlapping_executions").examined, 18);          // 16 cron runs, runs 100, 60
  EXPECT_EQ(Fixture::get(r, "one_successful_execution").examined, 18 + 16 + 1);  // runs, slots, the key
  EXPECT_EQ(Fixture::get(r, "success_recorded").examined, 18);
  EXPECT_EQ(Fixture::get(r, "outcome_matches_process").examined, 19);
  EXPECT_EQ(Fixture::get(r, "events_once").examined, 3);  // the accepted event, its dedupe key, its run
  EXPECT_EQ(Fixture::get(r, "confirming_not_cut_short").examined, 1);
  EXPECT_EQ(Fixture::get(r, "paused_leader_superseded").examined, 1);
  EXPECT_EQ(Fixture::get(r, "cron_slots_complete").examined, 16);
  EXPECT_EQ(Fixture::get(r, "cron_slots_accounted").examined, 16 + 16);  // slots with runs, window slots
  EXPECT_EQ(Fixture::get(r, "overlap_respected").examined, 16);          // the cron job's executions
  EXPECT_EQ(Fixture::get(r, "idempotency_keys_once").examined, 1);
  EXPECT_EQ(Fixture::get(r, "election_progress").examined, 2);
  EXPECT_EQ(Fixture::get(r, "elections_kept").examined, 2);  // (1, n1), (2, n2)
  // running_has_owner and assigned_has_owner judge the state at export,
  // taken once every run finished: nothing RUNNING or ASSIGNED to examine.
  for (const auto& i : r.invariants)
    if (i.name != "running_has_owner" && i.name != "assigned_has_owner") {
      EXPECT_GT(i.examined, 0) << i.name;
    }
  EXPECT_EQ(Fixture::get(r, "running_has_owner").examined, 0);
  EXPECT_EQ(Fixture::get(r, "assigned_has_owner").examined, 0);
  EXPECT_EQ(r.faults_effective.at("kill9_worker"), 1);
  EXPECT_NE(r.json().find("\"ok\":true"), std::string::npos);
}

// (a) Completed work executed again: attempt 1 exited 0, the database says
// it failed, attempt 2 ran it again. Passed the old checker.
TEST(Checker, SuccessThenReExecutionIsAViolation) {
  Fixture f;
  f.run(200, "api", "SUCCEEDED", "k2", 0, 2, 3);
  f.tr(200, "", "PENDING", {}, 1, 1, 2, T + 12 * sec);
  f.exec(200, 1, "x1", "w1", 700, T + 12'100'000, T + 12'500'000, 0);
  f.exec(200, 2, "x2", "w2", 701, T + 14'000'000, T + 14'500'000, 0);
  f.attempt(200, 1, "w1", "FAILED", "x1");
  f.attempt(200, 2, "w2", "SUCCEEDED", "x2");
  auto r = f.check();
  EXPECT_GE(Fixture::violations(r, "one_successful_execution"), 1) << r.markdown();
  EXPECT_EQ(Fixture::violations(r, "outcome_matches_process"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("after attempt 1 on w1 (pid 700, 1 process) had ended successfully"), std::string::npos);
}

// The same, but the first worker was partitioned from the leader for longer
// than continuation + margin: the documented window, listed apart.
TEST(Checker, ReExecutionAfterALongCutOffIsExcusedAndListed) {
  Fixture f;
  f.faults += ",partition_workers";
  f.nemesis << Fixture::line("inject", "partition_workers", "w1", T + 12 * sec)
            << Fixture::line("effect", "partition_workers", "w1", T + 12 * sec)
            << Fixture::line("heal", "partition_workers", "w1", T + 19 * sec);
  f.run(200, "api", "SUCCEEDED", "", 0, 2, 3);
  f.exec(200, 1, "x1", "w1", 700, T + 11'900'000, T + 12'500'000, 0);
  f.exec(200, 2, "x2", "w2", 701, T + 18'500'000, T + 18'900'000, 0);
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "one_successful_execution"), 0) << r.markdown();
  EXPECT_EQ(Fixture::get(r, "one_successful_execution").excused, 1) << r.markdown();
  EXPECT_NE(r.markdown().find("cut off by partition_workers for 7000 ms"), std::string::npos) << r.markdown();
}

// A success the database threw away (the run ended FAILED).
TEST(Checker, DiscardedSuccessIsAViolation) {
  Fixture f;
  f.run(200, "api", "FAILED", "", 0, 1, 1);
  f.exec(200, 1, "x1", "w1", 700, T + 12'100'000, T + 12'500'000, 0);
  f.attempt(200, 1, "w1", "FAILED", "x1");
  f.dead << "{\"run\":200,\"final_state\":\"FAILED\",\"attempts\":1}\n";
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "success_recorded"), 1) << r.markdown();
  EXPECT_EQ(Fixture::violations(r, "dead_letter_iff_failed"), 0) << r.markdown();
}

// A run created after the window closed, still RUNNING when the harness
// stopped the cluster although its task had exited 0 (chaos_short_run, a
// cron slot 0.84 s after the window): its success was cut off by the stop,
// not discarded, and is excused as such. The same run created inside the
// window, or ended FAILED after it, is a violation.
TEST(Checker, ASuccessInFlightWhenTheClusterStoppedIsNotADiscardedOne) {
  for (const auto& [created, state, violations] :
       std::vector<std::tuple<std::int64_t, std::string, int>>{{T + 20 * sec + 840'000, "RUNNING", 0},
                                                               {T + 19 * sec, "RUNNING", 1},
                                                               {T + 20 * sec + 840'000, "FAILED", 1}}) {
    Fixture f;
    f.run(300, "api", state, "", 0, 1, 1, 0, created);
    f.exec(300, 1, "x1", "w1", 700, created + 100'000, created + 400'000, 0);
    if (state == "FAILED") {
      f.attempt(300, 1, "w1", "FAILED", "x1");
      f.dead << "{\"run\":300,\"final_state\":\"FAILED\",\"attempts\":1}\n";
    }
    auto r = f.check();
    EXPECT_EQ(Fixture::violations(r, "success_recorded"), violations) << state << " " << created << r.markdown();
    if (violations == 0) {
      EXPECT_EQ(Fixture::get(r, "success_recorded").excused, 1) << r.markdown();
      EXPECT_NE(r.markdown().find("in flight when the cluster was stopped (created 840 ms after the window closed)"),
                std::string::npos)
          << r.markdown();
    }
  }
}

// (b) A write carrying a superseded epoch with no commit timestamp: it
// cannot be ordered against the election, so it fails (it passed as 0).
TEST(Checker, StaleWriteWithoutCommitTimestampIsAViolation) {
  Fixture f;
  f.tr(1, "SUCCEEDED", "RUNNING", 4, 5, 1, 1, std::nullopt);
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "no_stale_epoch_writes"), 1) << r.markdown();
  EXPECT_GE(Fixture::violations(r, "transition_history_continuous"), 1) << r.markdown();
}

// (c) pid reuse: the killed worker's task tree (pid 500) survives the kill;
// the retry on the restarted worker gets the same pid 500 (another start
// time). The surviving process must still be checked against the retry.
TEST(Checker, PidReuseCannotHideASurvivingTree) {
  Fixture f;
  f.run(600, "api", "SUCCEEDED", "", 0, 2, 3);
  f.process(600, 1, "p1", "w2", 900, 9000, T + 12 * sec, T + 15 * sec, std::nullopt);
  f.process(600, 2, "p2", "w2", 900, 9500, T + 14 * sec, T + 14'500'000, 0);
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "no_overlapping_executions"), 1) << r.markdown();
}

// A detached grandchild of attempt 1 alive after attempt 2 started.
TEST(Checker, SurvivingGrandchildOverlapsTheRetry) {
  Fixture f;
  f.process(100, 1, "a", "w2", 501, 51, T + 500'000, T + 9'800'000, std::nullopt, 500, 5000, "grandchild");
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "no_overlapping_executions"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("2 processes"), std::string::npos) << r.markdown();
}

// The same attempt started twice (two processes with one fence token).
TEST(Checker, DuplicateStartOfOneAttemptIsAViolation) {
  Fixture f;
  f.exec(100, 2, "b", "w1", 601, T + 10'000'000, T + 10'200'000, 0);
  auto r = f.check();
  EXPECT_GE(Fixture::violations(r, "no_overlapping_executions"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("the same attempt started twice"), std::string::npos) << r.markdown();
}

// (d) Every epoch won by the paused node: no takeover happened.
TEST(Checker, PausedLeaderReWinningItsOwnLeaseIsAViolation) {
  Fixture f;
  f.epochs.str("");
  f.epoch(1, "n1", "i1", T - sec);
  f.epoch(2, "n1", "i1", T + 9'500'000);
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "paused_leader_superseded"), 1) << r.markdown();
}

// An asynchronous failover lost epoch 3 (won by n1 at +16 s, seen by both
// nodes) and the new primary granted the number again, to n2 at +18 s. The
// database's history alone (1 n1, 2 n2, 3 n2) is clean, and so is every
// other invariant: only what the nodes said shows two holders of epoch 3.
TEST(Checker, AnEpochNumberGrantedTwiceIsAViolation) {
  Fixture f;
  f.epoch(3, "n2", "i3", T + 18 * sec);
  f.probes.str("");
  for (std::int64_t t = T; t <= T + 20 * sec; t += 200'000) {
    const bool paused = t >= T + 5 * sec && t < T + 9 * sec;
    const int e = t >= T + 16 * sec ? 3 : t >= T + 8 * sec ? 2 : 1;
    const std::string leader = e == 3 ? (t >= T + 18 * sec ? "n2" : "n1") : e == 2 ? "n2" : "n1";
    f.probe(t, "n1", !paused, leader == "n1" ? "leader" : "follower", e, leader);
    f.probe(t, "n2", true, leader == "n2" ? "leader" : "follower", e, leader);
  }
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "elections_kept"), 1) << r.markdown();
  EXPECT_NE(Fixture::get(r, "elections_kept").evidence.at(0).find("epoch 3 led by n1"), std::string::npos);
  for (const auto& i : r.invariants) {
    if (i.name == "elections_kept") continue;
    EXPECT_EQ(i.violations, 0) << i.name << "\n" << r.markdown();
  }
}

// The same loss with no campaign since: the database has no epoch 3.
TEST(Checker, AnElectionTheDatabaseNoLongerHasIsAViolation) {
  Fixture f;
  for (std::int64_t t = T + 12 * sec; t <= T + 13 * sec; t += 200'000) f.probe(t, "n2", true, "follower", 3, "n1");
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "elections_kept"), 1) << r.markdown();
  EXPECT_NE(Fixture::get(r, "elections_kept").evidence.at(0).find("has no epoch 3"), std::string::npos);
}

// A node that stops following elections (its election thread hung) while
// it still answers /status.
TEST(Checker, SilentNodeIsAViolation) {
  Fixture f;
  f.probes.str("");
  for (std::int64_t t = T; t <= T + 20 * sec; t += 200'000) {
    const bool n2_leads = t >= T + 8 * sec;
    f.probe(t, "n1", !(t >= T + 5 * sec && t < T + 9 * sec), n2_leads ? "follower" : "leader", n2_leads ? 2 : 1);
    f.probe(t, "n2", true, n2_leads ? "leader" : "follower", n2_leads ? 2 : 1);
    f.probe(t, "n3", true, "follower", 1);  // never sees epoch 2
  }
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "election_progress"), 1) << r.markdown();
}

TEST(Checker, LongLeaderlessIntervalIsAViolation) {
  Fixture f;
  f.probes.str("");
  for (std::int64_t t = T; t <= T + 20 * sec; t += 200'000) {
    const bool gap = t >= T + 5 * sec && t < T + 15 * sec;
    f.probe(t, "n1", true, gap ? "follower" : "leader", t >= T + 8 * sec ? 2 : 1);
  }
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "leaderless_bounded"), 1) << r.markdown();
}

// The bound holds after each node or database fault heals: a gap that the
// next such fault joins is measured from that fault's heal, unless the gap
// had already outlasted the bound when that fault began; a worker fault in
// the gap excuses nothing. (The fixture's pause_leader heals at +9 s.)
TEST(Checker, LeaderlessGapIsMeasuredFromTheLastNodeFaultThatJoinedIt) {
  struct Case {
    std::string fault;
    std::int64_t inject_s, heal_s, gap_end_s;
    int violations;
  };
  // A failover manager's promotion (--pg-ha) heals when the new primary
  // takes writes: the bound runs from then, not from the kill.
  for (const Case& c : {Case{"partition_leader_db", 11, 14, 17, 0},        // 3 s after its heal
                        Case{"pause_worker", 11, 14, 17, 1},               // 8 s after the pause's heal
                        Case{"partition_leader_db", 16, 18, 19, 1},        // began 7 s after the pause's heal
                        Case{"pg_ha_kill_primary", 10, 15, 19, 0},         // 4 s after the promotion
                        Case{"pg_ha_switchover", 10, 12, 19, 1},           // 7 s after it
                        Case{"pg_ha_partition_primary", 9, 16, 19, 0}}) {  // 3 s after the link healed
    Fixture f;
    f.faults += "," + c.fault;
    const std::string target = c.fault.rfind("pg_", 0) == 0 ? "postgres" : "n2";
    f.nemesis << Fixture::line("inject", c.fault, target, T + c.inject_s * sec)
              << Fixture::line("effect", c.fault, target, T + c.inject_s * sec)
              << Fixture::line("heal", c.fault, target, T + c.heal_s * sec);
    f.probes.str("");
    for (std::int64_t t = T; t <= T + 20 * sec; t += 200'000) {
      const bool gap = t >= T + 5 * sec && t < T + c.gap_end_s * sec;
      f.probe(t, "n1", true, gap ? "follower" : "leader", t >= T + 8 * sec ? 2 : 1);
    }
    auto r = f.check();
    EXPECT_EQ(Fixture::violations(r, "leaderless_bounded"), c.violations) << c.fault << " at +" << c.inject_s << " s\n"
                                                                          << r.markdown();
  }
}

TEST(Checker, RecordsThatDisagreeWithTheProcessesAreViolations) {
  Fixture f;
  // Run 300: the process was killed, the database says SUCCEEDED; its attempt
  // jumped from 1 to 3; it reused attempt 1's token; it has a dead letter.
  f.run(300, "api", "SUCCEEDED", "", 0, 3, 3);
  f.tr(300, "", "PENDING", {}, 1, 1, 2, T + 12 * sec);
  f.tr(300, "PENDING", "ASSIGNED", 1, 2, 1, 2, T + 12 * sec + 1);
  f.tr(300, "ASSIGNED", "ORPHANED", 2, 3, 1, 2, T + 12 * sec + 2);
  f.tr(300, "ORPHANED", "ASSIGNED", 3, 4, 3, 2, T + 12 * sec + 3);
  f.exec(300, 3, "same", "w1", 800, T + 12'100'000, T + 12'300'000, std::nullopt);
  f.attempt(300, 1, "w1", "FAILED", "same");
  f.attempt(300, 3, "w1", "SUCCEEDED", "same");
  f.dead << "{\"run\":300,\"final_state\":\"SUCCEEDED\",\"attempts\":3}\n";
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "outcome_matches_process"), 1) << r.markdown();
  EXPECT_EQ(Fixture::violations(r, "attempts_and_tokens"), 3) << r.markdown();
  EXPECT_EQ(Fixture::violations(r, "dead_letter_iff_failed"), 1) << r.markdown();
}

TEST(Checker, AGapInTheWriteChainIsAViolation) {
  Fixture f;
  f.run(400, "api", "SUCCEEDED", "", 0, 1, 3);
  f.tr(400, "", "PENDING", {}, 1, 1, 2, T + 12 * sec);
  f.tr(400, "ASSIGNED", "RUNNING", 2, 3, 1, 2, T + 12 * sec + 5);  // the write to version 2 is missing
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "transition_history_continuous"), 1) << r.markdown();
}

TEST(Checker, ConfirmingCutShortIsAViolation) {
  Fixture f;
  f.run(500, "api", "CANCELED", "", 0, 1, 3);
  f.tr(500, "", "PENDING", {}, 1, 1, 2, T + 10 * sec);
  f.tr(500, "PENDING", "ASSIGNED", 1, 2, 1, 2, T + 10 * sec);
  f.tr(500, "ASSIGNED", "RUNNING", 2, 3, 1, 2, T + 10 * sec);
  f.tr(500, "RUNNING", "RUNNING", 3, 4, 1, 2, T + 11 * sec, "CONFIRMING");
  f.tr(500, "RUNNING", "RETRY_WAITING", 4, 5, 1, 2, T + 13 * sec);  // 2 s, needs 6 s
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "confirming_not_cut_short"), 1) << r.markdown();
}

// Nodes may be configured with different continuation timeouts: the run
// carries the one its worker was sent, and the confirming wait is judged on
// that (7 s is enough for the configured 4 s + 2 s, not for this run's 8 s).
TEST(Checker, ConfirmingIsJudgedOnTheRunsOwnContinuationTimeout) {
  for (const std::optional<std::int64_t> carried : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{8000}}) {
    Fixture f;
    f.run(510, "api", "RETRY_WAITING", "", 0, 1, 3);
    f.tr(510, "", "PENDING", {}, 1, 1, 2, T + 10 * sec);
    f.tr(510, "PENDING", "ASSIGNED", 1, 2, 1, 2, T + 10 * sec, "NONE", carried);
    f.tr(510, "ASSIGNED", "RUNNING", 2, 3, 1, 2, T + 10 * sec, "NONE", carried);
    f.tr(510, "RUNNING", "RUNNING", 3, 4, 1, 2, T + 11 * sec, "CONFIRMING", carried);
    f.tr(510, "RUNNING", "RETRY_WAITING", 4, 5, 1, 2, T + 18 * sec, "NONE", carried);
    auto r = f.check();
    EXPECT_EQ(Fixture::violations(r, "confirming_not_cut_short"), carried ? 1 : 0) << r.markdown();
  }
}

// An assignment that never started is not an attempt: its reassignment
// keeps the number; growing it there (or not growing it after a retry) is a
// violation.
TEST(Checker, OrphanedReassignmentKeepsTheAttemptNumber) {
  for (int reassigned_as : {1, 2}) {
    Fixture f;
    f.run(520, "api", "SUCCEEDED", "", 0, reassigned_as, 1);
    f.tr(520, "", "PENDING", {}, 1, 1, 2, T + 10 * sec);
    f.tr(520, "PENDING", "ASSIGNED", 1, 2, 1, 2, T + 10 * sec);
    f.tr(520, "ASSIGNED", "ORPHANED", 2, 3, 1, 2, T + 11 * sec);
    f.tr(520, "ORPHANED", "ASSIGNED", 3, 4, reassigned_as, 2, T + 12 * sec);
    auto r = f.check();
    EXPECT_EQ(Fixture::violations(r, "attempts_and_tokens"), reassigned_as == 1 ? 0 : 2) << r.markdown();
  }
}

// A chaos export is taken once every run of the window finished; a run
// created after the window closed (the cron job keeps firing while the
// harness waits for quiescence) may still be RUNNING when the harness stops
// the cluster: not a run nothing will finish, and not judged. A run of the
// window left RUNNING still is. (Seen in a CI run: a cron slot fired 6 s
// after the window, its run started 20 ms before the worker was stopped.)
TEST(Checker, ARunCreatedAfterTheWindowMayBeRunningAtTheExport) {
  auto running_cron_run = [](Fixture& f, std::int64_t created_us) {
    f.runs << "{\"id\":300,\"job\":\"cron\",\"state\":\"RUNNING\",\"key\":null,\"attempt\":1,"
              "\"max_attempts\":3,\"slot\":0,\"created_us\":"
           << created_us << ",\"event_id\":0}\n";
  };
  Fixture f;
  running_cron_run(f, T + 26 * sec);  // the window ends at T + 20 s
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "running_has_owner"), 0) << r.markdown();
  EXPECT_EQ(Fixture::get(r, "running_has_owner").examined, 0);
  Fixture g;
  running_cron_run(g, T + 19 * sec);
  auto r2 = g.check();
  EXPECT_EQ(Fixture::violations(r2, "running_has_owner"), 1) << r2.markdown();
}

TEST(Checker, AFaultThatNeverTookEffectIsNotCovered) {
  Fixture f;
  f.faults += ",pg_restart,proxy_reset";
  f.nemesis << Fixture::line("inject", "pg_restart", "postgres", T + 12 * sec)
            << Fixture::line("heal", "pg_restart", "postgres", T + 13 * sec);
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "fault_coverage"), 2) << r.markdown();
  EXPECT_NE(r.markdown().find("pg_restart was injected 1 times but never seen to take effect"), std::string::npos);
}

TEST(Checker, MissingInputsAndTornEvidenceAreViolations) {
  Fixture f;
  f.evidence << "{\"ev\":\"start\",\"run\":1,\"att";  // torn
  auto r = f.check();
  fs::remove(f.dir + "/db/attempts.jsonl");
  auto r2 = check_history(f.dir);
  EXPECT_EQ(Fixture::violations(r, "history_complete"), 1) << r.markdown();
  EXPECT_EQ(Fixture::violations(r2, "history_complete"), 2) << r2.markdown();
}

// A worker killed long after its task exited had its finish on disk (or
// acknowledged): a re-execution then is a violation, not the excused
// "finish not durable" case (the 30-minute run excused one 48 s later).
TEST(Checker, AWorkerKillLongAfterTheExitExcusesNothing) {
  Fixture f;
  f.nemesis << Fixture::line("inject", "kill9_worker", "w1", T + 15 * sec)
            << Fixture::line("effect", "kill9_worker", "w1", T + 15 * sec)
            << Fixture::line("heal", "kill9_worker", "w1", T + 16 * sec);
  f.run(200, "api", "SUCCEEDED", "", 0, 2, 3);
  f.exec(200, 1, "x1", "w1", 700, T + 12'000'000, T + 12'500'000, 0);
  f.exec(200, 2, "x2", "w2", 701, T + 17'000'000, T + 17'400'000, 0);
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "one_successful_execution"), 1) << r.markdown();
  EXPECT_EQ(Fixture::get(r, "one_successful_execution").excused, 0);
}

// Cron slots and the decision ledger, each failure on a hand-made history.
TEST(Checker, ACronRunWithoutItsLedgerEntryIsAViolation) {
  Fixture f;
  f.run(50, "cron", "SUCCEEDED", "", S + 30, 1, 3);  // after the window: only the ledger rule applies
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "cron_slots_accounted"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("run 50 (job cron slot " + std::to_string(S + 30) + ") has no `created` ledger entry"),
            std::string::npos)
      << r.markdown();
}

TEST(Checker, TwoRunsOfOneSlotAreAViolation) {
  Fixture f;
  f.run(51, "cron", "SUCCEEDED", "", S + 3, 1, 3);
  f.decision("cron", "created", "on_time", S + 3, S + 3, 51, 2);
  auto r = f.check();
  EXPECT_GE(Fixture::violations(r, "cron_slots_accounted"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("slot " + std::to_string(S + 3) + " has 2 runs"), std::string::npos) << r.markdown();
}

TEST(Checker, ARunOfASlotRecordedAsSkippedIsAViolation) {
  Fixture f;
  f.decision("cron", "skipped", "misfire_policy", S + 2, S + 4, std::nullopt, 2);
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "cron_slots_accounted"), 3) << r.markdown();  // runs of S+2, S+3, S+4
  EXPECT_NE(r.markdown().find("which epoch 2 recorded as skipped (misfire_policy)"), std::string::npos);
}

TEST(Checker, AWindowSlotWithNeitherARunNorARecordIsAViolationAndASkipRecordCoversIt) {
  // The run of slot S+7 is not in the database's export.
  auto without_slot_7 = [](Fixture& f) {
    f.runs.str("");
    for (int i = 0; i <= 15; ++i)
      if (i != 7) f.run(i + 1, "cron", "SUCCEEDED", "", S + i, 1, 3);
    f.run(100, "api", "SUCCEEDED", "k1", 0, 2, 3);
  };
  Fixture f;
  without_slot_7(f);
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "cron_slots_accounted"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("slot " + std::to_string(S + 7) + " of cron has neither a run nor a ledger record"),
            std::string::npos)
      << r.markdown();
  Fixture g;
  without_slot_7(g);
  g.decision("cron", "skipped", "starting_deadline", S + 7, S + 7, std::nullopt, 2);
  auto covered = g.check();
  EXPECT_EQ(Fixture::violations(covered, "cron_slots_accounted"), 0) << covered.markdown();
}

// Overlap control, judged by the processes: each failure on a hand-made
// history first.
TEST(Checker, TwoExecutionsOfAJobLimitedToOneAliveAtOnceAreAViolation) {
  Fixture f;
  f.jobs += R"({"name":"api","max_instances":null,"concurrency_policy":"forbid","exclusive_execution":false})"
            "\n";
  // Run 100 (job api, limit 1 under forbid) ran 9.7-10.5 s; run 300 too, 10-11 s.
  f.run(300, "api", "SUCCEEDED", "k3", 0, 1, 3);
  f.exec(300, 1, "z", "w2", 900, T + 10 * sec, T + 11 * sec, 0);
  f.attempt(300, 1, "w2", "SUCCEEDED", "z");
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "overlap_respected"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("job api: 2 executions alive at once (limit 1)"), std::string::npos) << r.markdown();
}

TEST(Checker, ALimitOfTwoAllowsTwoButNotThree) {
  auto with = [](int executions) {
    Fixture f;
    f.jobs += R"({"name":"pair","max_instances":2,"concurrency_policy":"allow","exclusive_execution":false})"
              "\n";
    for (int i = 0; i < executions; ++i) {
      f.run(400 + i, "pair", "SUCCEEDED", "", 0, 1, 3);
      f.exec(400 + i, 1, "p" + std::to_string(i), "w1", 950 + i, T + 12 * sec + i * 100'000, T + 13 * sec, 0);
    }
    return Fixture::violations(f.check(), "overlap_respected");
  };
  EXPECT_EQ(with(2), 0);
  EXPECT_EQ(with(3), 1);
}

TEST(Checker, ExecutionsOfTwoMutuallyExclusiveJobsAtOnceAreAViolation) {
  Fixture f;
  f.jobs += R"({"name":"ex1","max_instances":null,"concurrency_policy":"allow","mutually_exclusive":true})"
            "\n"
            R"({"name":"ex2","max_instances":null,"concurrency_policy":"allow","mutually_exclusive":true})"
            "\n";
  f.run(500, "ex1", "SUCCEEDED", "", 0, 1, 3);
  f.exec(500, 1, "e1", "w1", 960, T + 12 * sec, T + 13 * sec, 0);
  f.run(501, "ex2", "SUCCEEDED", "", 0, 1, 3);
  f.exec(501, 1, "e2", "w2", 961, T + 12'900'000, T + 14 * sec, 0);
  f.run(502, "ex2", "SUCCEEDED", "", 0, 1, 3);
  f.exec(502, 1, "e3", "w2", 962, T + 15 * sec, T + 16 * sec, 0);  // after: fine
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "overlap_respected"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("mutually exclusive jobs: 2 executions alive at once"), std::string::npos)
      << r.markdown();
}

// exclusive_execution: nothing else alive while it is, whatever the job.
TEST(Checker, AnExecutionAliveBesideOneOfAnExclusiveJobIsAViolation) {
  auto with = [](std::int64_t from_ns, std::int64_t to_ns) {
    Fixture f;
    f.jobs += R"({"name":"vacuum","max_instances":null,"concurrency_policy":"allow","exclusive_execution":true})"
              "\n";
    f.run(600, "vacuum", "SUCCEEDED", "", 0, 1, 3);
    f.exec(600, 1, "v1", "w1", 970, from_ns, to_ns, 0);
    return f.check();
  };
  // Beside the cron job's executions (one every second from T + 0.1 s).
  auto r = with(T + 3 * sec, T + 5 * sec);
  EXPECT_EQ(Fixture::violations(r, "overlap_respected"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("exclusive job vacuum: run 600"), std::string::npos) << r.markdown();
  EXPECT_NE(r.markdown().find("alive beside run 4"), std::string::npos) << r.markdown();
  // Alone, after everything else ended.
  r = with(T + 25 * sec, T + 26 * sec);
  EXPECT_EQ(Fixture::violations(r, "overlap_respected"), 0) << r.markdown();
}

// Events, each failure on a hand-made history first.
TEST(Checker, TwoRunsOfOneEventForOneJobAreAViolation) {
  Fixture f;
  f.run(61, "evt", "SUCCEEDED", "", 0, 1, 3, 1);
  auto r = f.check();
  EXPECT_GE(Fixture::violations(r, "events_once"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("event 1 has 2 runs of job evt"), std::string::npos) << r.markdown();
}

TEST(Checker, AnAcceptedEventWithoutItsRunIsAViolation) {
  Fixture f;
  f.events << R"({"id":2,"kind":"tick","dedupe_key":"e2","processed":true})"
           << "\n";
  f.submissions += "event=e2 accepted=1 status=201\n";
  f.submissions += "event=e3 accepted=1 status=201\n";  // never recorded at all
  auto r = f.check();
  EXPECT_EQ(Fixture::violations(r, "events_once"), 2) << r.markdown();
  EXPECT_NE(r.markdown().find("event e2 (id 2) has no run of subscribed job evt"), std::string::npos) << r.markdown();
  EXPECT_NE(r.markdown().find("event e3 was accepted but is not recorded"), std::string::npos) << r.markdown();
}

TEST(Checker, TwoEventsForOneDedupeKeyAreAViolation) {
  Fixture f;
  f.events << R"({"id":3,"kind":"tick","dedupe_key":"e1","processed":true})"
           << "\n";
  auto r = f.check();
  EXPECT_GE(Fixture::violations(r, "events_once"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("dedupe key e1 has 2 events"), std::string::npos) << r.markdown();
}

// Keys per job and dedupe keys per kind (schemas/0048): one key on two jobs
// is two requests, each with its own success, and one dedupe key on two
// kinds two events; the same key twice on one job (or kind) is still a
// violation.
TEST(Checker, AKeyIsJudgedPerJobAndADedupeKeyPerKind) {
  auto with = [](const std::string& second_job, const std::string& second_kind) {
    Fixture f;
    f.simple_run(810, "report", "order-43", 0, "w1", T + 20 * sec, 2);
    f.simple_run(811, second_job, "order-43", 0, "w2", T + 21 * sec, 2);
    f.events << R"({"id":8,"kind":")" << second_kind << R"(","dedupe_key":"e1","processed":true})"
             << "\n";
    return f.check();
  };
  auto apart = with("invoice", "tock");
  EXPECT_EQ(Fixture::violations(apart, "one_successful_execution"), 0) << apart.markdown();
  EXPECT_EQ(Fixture::violations(apart, "events_once"), 0) << apart.markdown();
  auto together = with("report", "tick");
  EXPECT_GE(Fixture::violations(together, "one_successful_execution"), 1) << together.markdown();
  EXPECT_NE(together.markdown().find("key order-43 of job report"), std::string::npos) << together.markdown();
  EXPECT_NE(together.markdown().find("dedupe key e1 has 2 events of kind tick"), std::string::npos)
      << together.markdown();
}

// One fault vocabulary for the harness and the simulator: every name
// unique and found again; the harness's faults in the order its nemesis
// draws from (a reordering changes every recorded schedule).
TEST(FaultVocabulary, NamesAreUniqueAndTheHarnessOrderIsKept) {
  std::set<std::string> names;
  for (const auto& k : baton::checker::fault_kinds) {
    EXPECT_TRUE(names.insert(std::string(k.name)).second) << k.name;
    EXPECT_EQ(baton::checker::fault_named(k.name), k.fault) << k.name;
    EXPECT_EQ(baton::checker::name_of(k.fault), k.name);
    EXPECT_TRUE(k.harness || k.simulator) << k.name << " is injected by nobody";
  }
  EXPECT_FALSE(baton::checker::fault_named("kill9_everything").has_value());
  EXPECT_EQ(baton::checker::harness_fault_names(),
            (std::vector<std::string>{"kill9_leader",       "kill9_follower",
                                      "kill9_worker",       "pause_leader",
                                      "pause_worker",       "partition_leader_db",
                                      "partition_workers",  "proxy_latency",
                                      "proxy_reset",        "pg_restart",
                                      "clock_skew",         "db_stale_connections",
                                      "continuation_skew",  "duplicate_worker",
                                      "outbox_disk",        "kill_supervisor",
                                      "clock_rate",         "pg_failover",
                                      "pg_ha_kill_primary", "pg_ha_lose_primary",
                                      "pg_ha_switchover",   "pg_ha_partition_primary"}));
}

// Keyed concurrency (schemas/0035): the limit holds per key, each key apart.
TEST(Checker, MoreExecutionsOfOneKeyAliveThanItsLimitAreAViolation) {
  auto with = [](const std::string& second_key) {
    Fixture f;
    f.jobs += R"({"name":"sync","max_instances":null,"concurrency_policy":"allow","concurrency_limit":1})"
              "\n";
    f.runs << R"({"id":700,"job":"sync","state":"SUCCEEDED","key":null,"attempt":1,"max_attempts":3,"slot":0,)"
           << R"("created_us":1,"event_id":0,"concurrency_key":"acme"})"
           << "\n"
           << R"({"id":701,"job":"sync","state":"SUCCEEDED","key":null,"attempt":1,"max_attempts":3,"slot":0,)"
           << R"("created_us":1,"event_id":0,"concurrency_key":")" << second_key << "\"}\n";
    f.exec(700, 1, "k1", "w1", 980, T + 12 * sec, T + 13 * sec, 0);
    f.exec(701, 1, "k2", "w2", 981, T + 12'500'000, T + 14 * sec, 0);
    return f.check();
  };
  auto r = with("acme");
  EXPECT_EQ(Fixture::violations(r, "overlap_respected"), 1) << r.markdown();
  EXPECT_NE(r.markdown().find("job sync key \"acme\": 2 executions alive at once (limit 1)"), std::string::npos)
      << r.markdown();
  r = with("bolt");
  EXPECT_EQ(Fixture::violations(r, "overlap_respected"), 0) << "another key" << r.markdown();
}
