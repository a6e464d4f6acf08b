// A slice judged: its violations named by the runs they are about (the key
// each is recorded once under), context runs not judged themselves,
// no_stale_epoch_writes set aside without commit timestamps.
#include "baton/verify/slice_verdict.h"

#include <gtest/gtest.h>

#include "baton/verify/verify_tally.h"

using namespace baton;
using namespace baton::verify;

namespace {

constexpr std::int64_t T = 1'800'000'000'000'000;
constexpr std::int64_t sec = 1'000'000;

void add_run(checker::History& h, std::int64_t id, const std::string& state, std::int64_t start,
             std::vector<std::string> outcomes) {
  checker::RunRow r;
  r.id = id;
  r.job = "j";
  r.state = state;
  r.attempt = static_cast<int>(outcomes.size());
  r.max_attempts = 5;
  h.runs[id] = r;
  int a = 0;
  for (const auto& o : outcomes) {
    checker::AttemptRow row;
    row.run = id;
    row.attempt = ++a;
    row.worker = "w1";
    row.outcome = o;
    row.token = "t" + std::to_string(id) + "-" + std::to_string(a);
    row.started_us = start + (a - 1) * 10 * sec;
    row.finished_us = *row.started_us + sec;
    h.attempts.push_back(row);
  }
}

store::RecordedSlice slice_with_a_second_success() {
  store::RecordedSlice s;
  s.runs = 2;
  s.history.taken_us = T + 100 * sec;
  s.history.epochs.push_back({1, "n1", "i1", T - sec});
  s.history.jobs["j"] = checker::JobRow{"j", {}, "allow", false, false, {}};
  add_run(s.history, 7, "SUCCEEDED", T, {"SUCCEEDED", "SUCCEEDED"});  // succeeded twice
  add_run(s.history, 8, "SUCCEEDED", T, {"SUCCEEDED"});
  return s;
}

TEST(SliceVerdict, AViolationIsNamedByItsRunsAndCountedInTheTally) {
  const SliceVerdict v = judge_slice(slice_with_a_second_success(), {});
  ASSERT_EQ(v.violations.size(), 1u) << v.report.markdown();
  EXPECT_EQ(v.violations[0].invariant, "one_successful_execution");
  EXPECT_EQ(v.violations[0].runs, std::vector<std::int64_t>{7});
  EXPECT_EQ(v.violations[0].finding, "runs 7");
  VerifyTally tally;
  tally.add(v, 2);
  EXPECT_FALSE(tally.ok());
  EXPECT_EQ(tally.by_invariant.at("one_successful_execution"), std::make_pair(std::int64_t{2}, std::int64_t{1}));
  EXPECT_NE(tally.text().find("one_successful_execution: run 7: run 7 attempt 2 on w1 (as recorded) started"),
            std::string::npos)
      << tally.text();
  EXPECT_NE(tally.json().find("\"run_ids\":[7]"), std::string::npos) << tally.json();
}

TEST(SliceVerdict, AContextRunIsNotJudgedItself) {
  store::RecordedSlice s = slice_with_a_second_success();
  s.history.context_runs.insert(7);  // judged in its own slice
  const SliceVerdict v = judge_slice(s, {});
  EXPECT_TRUE(v.violations.empty()) << v.report.markdown();
  EXPECT_EQ(v.report.totals.at("context_runs"), 1);
}

TEST(SliceVerdict, WithoutCommitTimestampsTheEpochOrderIsNotExamined) {
  store::RecordedSlice s = slice_with_a_second_success();
  s.commit_timestamps = false;
  const SliceVerdict v = judge_slice(s, {});
  for (const auto& i : v.report.invariants) EXPECT_NE(i.name, "no_stale_epoch_writes");
  EXPECT_NE(v.report.not_examinable.at("no_stale_epoch_writes").find("track_commit_timestamp"), std::string::npos);
}

TEST(SliceVerdict, RunsNamedAreWholeWordsOnce) {
  EXPECT_EQ(runs_named("run 12: run 12 attempt 1 and run 3; rerun 99, run x"), (std::vector<std::int64_t>{12, 3}));
  EXPECT_EQ(finding_of("run 12 and run 3"), "runs 3 12");
  EXPECT_EQ(finding_of("epoch 4 follows 2"), "epoch 4 follows 2");
}

}  // namespace
