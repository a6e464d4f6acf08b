// The checker on histories read from a database alone (the production
// sweep and `baton verify`): the same invariant functions, executions made
// from the recorded attempts, and running_has_owner on the state when the
// history was taken. Each case is the smallest hand-made history that
// breaks its rule; the clean one passes with every production check
// examining something.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "baton/checker/checker.h"
#include "baton/checker/history.h"

using namespace baton::checker;

namespace {

constexpr std::int64_t T0 = 1'800'000'000'000'000;  // µs
constexpr std::int64_t one_sec = 1'000'000;

const InvariantResult& get(const Report& r, const std::string& name) {
  for (const auto& i : r.invariants)
    if (i.name == name) return i;
  throw std::runtime_error("no invariant " + name);
}

/// A run created PENDING, assigned, started and ended `outcome` at epoch 1,
/// with its one attempt on `worker` from `start` for 1 s.
void finished_run(History& h, std::int64_t id, const std::string& job, const std::string& outcome, std::int64_t start,
                  const std::string& worker = "w1") {
  RunRow r;
  r.id = id;
  r.job = job;
  r.state = outcome;
  r.attempt = 1;
  r.max_attempts = 1;
  r.created_us = start - one_sec;
  h.runs[id] = r;
  auto tr = [&](const std::string& from, const std::string& to, std::optional<std::int64_t> fv, std::int64_t at) {
    h.transitions.push_back({0, id, from, to, "NONE", fv, fv.value_or(0) + 1, 1, 1, at, 30'000});
  };
  tr("", "PENDING", {}, start - one_sec);
  tr("PENDING", "ASSIGNED", 1, start - one_sec / 2);
  tr("ASSIGNED", "RUNNING", 2, start);
  tr("RUNNING", outcome, 3, start + one_sec);
  AttemptRow a;
  a.run = id;
  a.attempt = 1;
  a.worker = worker;
  a.outcome = outcome;
  a.token = "t" + std::to_string(id);
  a.exit_code = outcome == "SUCCEEDED" ? 0 : 1;
  a.started_us = start;
  a.finished_us = start + one_sec;
  h.attempts.push_back(a);
  if (outcome == "FAILED") h.dead_letters.push_back({id, "FAILED", 1});
}

History clean() {
  History h;
  h.window.continuation_margin_ms = 1000;
  h.window.owner_grace_ms = 10'000;
  h.taken_us = T0 + 100 * one_sec;
  h.epochs.push_back({1, "n1", "i1", T0 - 10 * one_sec});
  h.jobs["once"] = JobRow{"once", 1, "allow", false, false, {}};
  h.workers["w1"] = {"w1", true, {}};
  finished_run(h, 1, "once", "SUCCEEDED", T0);
  finished_run(h, 2, "once", "FAILED", T0 + 2 * one_sec);
  finished_run(h, 3, "once", "SUCCEEDED", T0 + 4 * one_sec);
  h.runs[3].key = "k3";
  h.accepted_keys.push_back("k3");
  // One run RUNNING now on the attached worker.
  RunRow running;
  running.id = 4;
  running.job = "other";
  running.state = "RUNNING";
  running.attempt = 1;
  running.max_attempts = 1;
  running.worker = "w1";
  running.continuation = "NONE";
  h.runs[4] = running;
  executions_from_attempts(h);
  return h;
}

TEST(RecordedHistory, ACleanHistoryPassesAndListsWhatItCannotSee) {
  const Report r = check_recorded_history(clean());
  EXPECT_TRUE(r.ok()) << r.markdown();
  for (const char* name : {"one_successful_execution", "no_overlapping_executions", "legal_transitions",
                           "transition_history_continuous", "attempts_and_tokens", "dead_letter_iff_failed",
                           "overlap_respected", "idempotency_keys_once", "running_has_owner"})
    EXPECT_GT(get(r, name).examined, 0) << name;
  EXPECT_EQ(get(r, "running_has_owner").examined, 1);
  // The checks that need the harness's evidence are named, not run.
  EXPECT_TRUE(r.not_examinable.count("success_recorded"));
  EXPECT_TRUE(r.not_examinable.count("fault_coverage"));
  for (const auto& i : r.invariants) EXPECT_FALSE(r.not_examinable.count(i.name)) << i.name;
  EXPECT_NE(r.json().find("\"not_examinable\":{"), std::string::npos);
}

// What the test inserts with SQL: a second attempt of a run that
// already succeeded, recorded SUCCEEDED too.
TEST(RecordedHistory, ASecondRecordedSuccessOfOneRunIsAViolation) {
  History h = clean();
  AttemptRow again = h.attempts.front();  // run 1's
  again.attempt = 2;
  again.token = "t1b";
  again.started_us = T0 + 10 * one_sec;
  again.finished_us = T0 + 11 * one_sec;
  h.attempts.push_back(again);
  executions_from_attempts(h);
  const Report r = check_recorded_history(h);
  EXPECT_EQ(get(r, "one_successful_execution").violations, 1) << r.markdown();
  EXPECT_NE(r.markdown().find("run 1: run 1 attempt 2 on w1 (as recorded) started"), std::string::npos) << r.markdown();
}

TEST(RecordedHistory, TwoRecordedAttemptsOfALimitedJobAtOnceAreAViolation) {
  History h = clean();
  h.attempts[1].started_us = T0 + one_sec / 2;  // run 2 starts while run 1 runs (max_instances 1)
  executions_from_attempts(h);
  const Report r = check_recorded_history(h);
  EXPECT_EQ(get(r, "overlap_respected").violations, 1) << r.markdown();
}

// Seen in a 30-minute chaos run (seed 58): a worker's task exited, its
// finish waited in the worker's outbox while the worker reconnected, the
// leader gave the attempt up (RUNNING -> RETRY_WAITING, its key slot
// released) and took the late success 2.6 s later. The runs of the key
// that started in between did not overlap it (the task's own evidence),
// but the attempt's recorded end was the late success's write. As
// recorded, an attempt runs until the write that took it out of RUNNING.
TEST(RecordedHistory, AnAttemptGivenUpRunsAsRecordedUntilItWasGivenUpNotUntilItsLateSuccess) {
  History h = clean();
  for (auto& t : h.transitions)
    if (t.run == 1 && t.from == "RUNNING") t.to = "RETRY_WAITING";  // given up at T0 + 1 s
  h.transitions.push_back({0, 1, "RETRY_WAITING", "SUCCEEDED", "NONE", 4, 5, 1, 1, T0 + 6 * one_sec, 30'000});
  h.attempts[0].finished_us = T0 + 6 * one_sec;  // the late success's write
  executions_from_attempts(h);
  Report r = check_recorded_history(h);
  EXPECT_EQ(get(r, "overlap_respected").violations, 0) << r.markdown();
  // Run 2 started before the attempt was given up: that is an overlap.
  h.attempts[1].started_us = T0 + one_sec / 2;
  executions_from_attempts(h);
  r = check_recorded_history(h);
  EXPECT_EQ(get(r, "overlap_respected").violations, 1) << r.markdown();
}

// The same pattern a slice later (a 10-minute chaos run, seed 58): the run
// given up and late reported ended in an earlier slice, and is read only as
// context of the run that started in between. Its writes come as context
// (never judged), and they end its execution where it was given up.
TEST(RecordedHistory, AContextRunGivenUpEndsWhereItWasGivenUpToo) {
  History h = clean();
  std::vector<TransitionRow> mine;
  for (auto& t : h.transitions) {
    if (t.run != 1) continue;
    if (t.from == "RUNNING") t.to = "RETRY_WAITING";  // given up at T0 + 1 s
    mine.push_back(t);
  }
  mine.push_back({0, 1, "RETRY_WAITING", "SUCCEEDED", "NONE", 4, 5, 1, 1, T0 + 6 * one_sec, 30'000});
  h.transitions.erase(std::remove_if(h.transitions.begin(), h.transitions.end(), [](auto& t) { return t.run == 1; }),
                      h.transitions.end());
  h.context_runs.insert(1);
  h.attempts[0].finished_us = T0 + 6 * one_sec;  // the late success's write; runs 2 and 3 start at T0 + 2 s and 4 s
  executions_from_attempts(h);
  Report r = check_recorded_history(h);
  EXPECT_EQ(get(r, "overlap_respected").violations, 2) << "without its writes it ran until T + 6 s, over runs 2 and 3";
  h.context_transitions = mine;
  executions_from_attempts(h);
  r = check_recorded_history(h);
  EXPECT_EQ(get(r, "overlap_respected").violations, 0) << r.markdown();
  EXPECT_EQ(get(r, "legal_transitions").examined, static_cast<std::int64_t>(h.transitions.size()))
      << "the context run's writes are not judged";
}

TEST(RecordedHistory, ARunningRunOnADetachedWorkerIsAViolationOnceTheGraceIsOver) {
  History h = clean();
  h.workers["w1"] = {"w1", false, h.taken_us - 5 * one_sec};  // detached 5 s ago: the leader's to notice
  EXPECT_EQ(get(check_recorded_history(h), "running_has_owner").violations, 0);
  h.workers["w1"].detached_us = h.taken_us - 60 * one_sec;
  const Report r = check_recorded_history(h);
  EXPECT_EQ(get(r, "running_has_owner").violations, 1) << r.markdown();
  EXPECT_NE(r.markdown().find("run 4 (other) attempt 1 is RUNNING on w1, detached 60000 ms ago"), std::string::npos)
      << r.markdown();
  // CONFIRMING within its deadline is the leader keeping it: no violation.
  h.runs[4].continuation = "CONFIRMING";
  h.runs[4].continuation_deadline_us = h.taken_us + 5 * one_sec;
  EXPECT_EQ(get(check_recorded_history(h), "running_has_owner").violations, 0);
  // Long past its deadline, margin and grace: nobody gave it up.
  h.runs[4].continuation_deadline_us = h.taken_us - 60 * one_sec;
  EXPECT_EQ(get(check_recorded_history(h), "running_has_owner").violations, 1);
  // On a worker nobody knows.
  h.runs[4].continuation = "NONE";
  h.runs[4].worker = "ghost";
  EXPECT_EQ(get(check_recorded_history(h), "running_has_owner").violations, 1);
}

TEST(RecordedHistory, AnAssignedRunOnAWorkerGoneLongerThanTheGraceIsAViolation) {
  History h = clean();
  RunRow assigned = h.runs[4];
  assigned.id = 5;
  assigned.state = "ASSIGNED";
  assigned.worker = "w2";
  h.runs[5] = assigned;
  h.workers["w2"] = {"w2", true, {}};
  EXPECT_EQ(get(check_recorded_history(h), "assigned_has_owner").examined, 1);
  EXPECT_EQ(get(check_recorded_history(h), "assigned_has_owner").violations, 0) << "its worker is attached";
  h.workers["w2"] = {"w2", false, h.taken_us - 5 * one_sec};  // detached 5 s ago: the leader's to take back
  EXPECT_EQ(get(check_recorded_history(h), "assigned_has_owner").violations, 0);
  h.workers["w2"].detached_us = h.taken_us - 60 * one_sec;
  const Report r = check_recorded_history(h);
  EXPECT_EQ(get(r, "assigned_has_owner").violations, 1) << r.markdown();
  EXPECT_NE(r.markdown().find("run 5 (other) attempt 1 is ASSIGNED to w2, detached 60000 ms ago"), std::string::npos)
      << r.markdown();
  EXPECT_EQ(get(r, "running_has_owner").violations, 0) << "run 4 is RUNNING on the attached w1";
  // To a worker nobody knows.
  h.runs[5].worker = "ghost";
  EXPECT_EQ(get(check_recorded_history(h), "assigned_has_owner").violations, 1);
  // A history with no ASSIGNED run has nothing to examine, and that is no failure.
  h.runs.erase(5);
  EXPECT_TRUE(check_recorded_history(h).ok()) << check_recorded_history(h).markdown();
}

TEST(RecordedHistory, AnAttemptThatNeverStartedIsNoExecution) {
  History h = clean();
  h.attempts[0].started_us.reset();
  executions_from_attempts(h);
  EXPECT_FALSE(h.executions.count(1));
  EXPECT_EQ(h.executions.at(2).size(), 1u);
  EXPECT_FALSE(h.executions.at(2).front().succeeded());  // recorded FAILED
  EXPECT_TRUE(h.executions.at(3).front().succeeded());
}

}  // namespace

namespace {

// The two tables of checks (checker/src/invariants.cpp) stay one list: every
// invariant of the chaos checker either runs in production or is named, with
// what it needs, as not examinable there; nothing runs in production that
// the chaos checker does not.
TEST(RecordedHistory, EveryInvariantRunsInProductionOrIsNamedAsNotExaminable) {
  const Report full = check_history(History{});
  const Report recorded = check_recorded_history(History{});
  std::set<std::string> in_production;
  for (const auto& i : recorded.invariants) in_production.insert(i.name);
  std::set<std::string> all;
  for (const auto& i : full.invariants) {
    all.insert(i.name);
    EXPECT_TRUE(in_production.count(i.name) + recorded.not_examinable.count(i.name) == 1) << i.name;
  }
  for (const auto& name : in_production) EXPECT_TRUE(all.count(name)) << name;
  for (const auto& [name, why] : recorded.not_examinable) EXPECT_TRUE(all.count(name)) << name;
}

}  // namespace
