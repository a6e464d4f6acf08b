// check_partitioned on hand-made histories: the partitioned-leadership rules
// must see the failures they exist for before a green simulation counts.
#include "baton/sim/partitioned_history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace baton::sim {
namespace {

const checker::InvariantResult& find(const checker::Report& r, const std::string& name) {
  auto it = std::find_if(r.invariants.begin(), r.invariants.end(), [&](const auto& i) { return i.name == name; });
  if (it == r.invariants.end()) throw std::runtime_error("no invariant " + name);
  return *it;
}

bool names(const checker::InvariantResult& inv, const std::string& text) {
  return std::any_of(inv.evidence.begin(), inv.evidence.end(),
                     [&](const std::string& e) { return e.find(text) != std::string::npos; });
}

/// `name` found exactly one violation, and its evidence says `text`.
void expect_one_violation(const checker::Report& r, const std::string& name, const std::string& text) {
  const auto& inv = find(r, name);
  EXPECT_EQ(inv.violations, 1) << name;
  EXPECT_TRUE(names(inv, text)) << name << ": " << (inv.evidence.empty() ? "no evidence" : inv.evidence.front());
}

/// Two partitions, each with its own elections: partition 0 elected epoch 1
/// (n1) at 1 ms and epoch 2 (n2) at 5 ms; partition 1 elected epoch 1 (n3) at
/// 1 ms. Run 1 is partition 0's, inserted under epoch 1 at 2 ms; run 2 is
/// partition 1's, inserted under its epoch 1 at 6 ms.
struct Story {
  PartitionedHistory h;

  Story() {
    h.whole.window.start_us = 0;
    h.whole.window.end_us = 20'000;
    h.epochs = {{{1, "n1", "n1-i1", 1'000}, {2, "n2", "n2-i1", 5'000}}, {{1, "n3", "n3-i1", 1'000}}};
    for (std::int64_t run : {1, 2}) {
      checker::RunRow r;
      r.id = run;
      r.state = "PENDING";
      r.max_attempts = 1;
      h.whole.runs[run] = r;
    }
    h.run_partition = {{1, 0}, {2, 1}};
    write(1, "", "PENDING", 1, 2'000, 0);
    write(2, "", "PENDING", 1, 6'000, 1);
  }

  void write(std::int64_t run, const std::string& from, const std::string& to, std::int64_t epoch, std::int64_t at_us,
             int fenced_by) {
    checker::TransitionRow t;
    t.id = static_cast<std::int64_t>(h.whole.transitions.size()) + 1;
    t.run = run;
    t.from = from;
    t.to = to;
    std::int64_t version = 0;
    for (const auto& x : h.whole.transitions)
      if (x.run == run) version = x.to_version;
    if (version > 0) t.from_version = version;
    t.to_version = version + 1;
    t.attempt = 1;
    t.epoch = epoch;
    t.commit_us = at_us;
    t.continuation = "NONE";
    h.whole.transitions.push_back(t);
    h.fenced_by.push_back(fenced_by);
    h.whole.runs[run].state = to;
  }
};

TEST(PartitionedHistory, WritesFencedByTheirOwnPartitionsCurrentLeasesPass) {
  Story s;
  s.write(1, "PENDING", "CANCELED", 2, 7'000, 0);
  s.write(2, "PENDING", "CANCELED", 1, 7'000, 1);
  const checker::Report r = check_partitioned(s.h);
  for (const char* name : {"writes_fenced_by_own_partition", "no_stale_epoch_writes", "one_leader_per_epoch",
                           "legal_transitions", "transition_history_continuous"}) {
    const auto& inv = find(r, name);
    EXPECT_EQ(inv.violations, 0) << name << ": " << (inv.evidence.empty() ? "" : inv.evidence.front());
  }
  EXPECT_EQ(find(r, "writes_fenced_by_own_partition").examined, 4);
  // Epochs are per partition: 1, 2 and 1 is two histories that each
  // increase by one, not one that goes back.
  EXPECT_EQ(find(r, "one_leader_per_epoch").examined, 3);
  EXPECT_EQ(r.totals.at("partitions"), 2);
}

TEST(PartitionedHistory, AWriteFencedByAnotherPartitionsLeaseIsAViolationEvenWithACurrentLookingEpoch) {
  // Partition 1's leader (epoch 1 of partition 1) writes run 1, which is
  // partition 0's. Epoch numbers of different partitions are unrelated: had
  // partition 0 still been at epoch 1 the number alone would look current.
  Story s;
  s.write(1, "PENDING", "CANCELED", 2, 7'000, 1);
  const checker::Report r = check_partitioned(s.h);
  expect_one_violation(r, "writes_fenced_by_own_partition",
                       "run 1 PENDING -> CANCELED carrying epoch 2 (partition 0) was fenced by partition 1's lease");
  EXPECT_EQ(find(r, "no_stale_epoch_writes").violations, 0) << "the epoch alone looked current";
}

TEST(PartitionedHistory, AStaleEpochIsJudgedAgainstItsOwnPartitionsElections) {
  // Partition 0's deposed leader (epoch 1) writes run 1 after partition 0
  // elected epoch 2; the same number is partition 1's current epoch, so
  // one merged list of epochs could not tell. Per partition it is stale.
  Story s;
  s.write(1, "PENDING", "CANCELED", 1, 7'000, 0);
  const checker::Report r = check_partitioned(s.h);
  expect_one_violation(r, "no_stale_epoch_writes", "partition 0: run 1 PENDING -> CANCELED carrying epoch 1 committed");
  EXPECT_EQ(find(r, "writes_fenced_by_own_partition").violations, 0);
}

TEST(PartitionedHistory, EpochsOfOnePartitionMustStillIncreaseByOne) {
  Story s;
  s.h.epochs[1].push_back({3, "n1", "n1-i1", 9'000});  // partition 1 skips epoch 2
  expect_one_violation(check_partitioned(s.h), "one_leader_per_epoch", "partition 1: epoch 3 follows 1");
}

TEST(PartitionedHistory, ARunWithoutAPartitionIsAViolation) {
  Story s;
  s.h.run_partition.erase(2);
  expect_one_violation(check_partitioned(s.h), "writes_fenced_by_own_partition",
                       "run 2 insert -> PENDING carrying epoch 1: the run has no partition");
}

}  // namespace
}  // namespace baton::sim
