// SPEC section 10, as amended 2026-12-03: a write may commit without
// waiting for its WAL flush only where losing it in a crash is harmless.
// That is the assignment batch alone (a lost assignment is a run still
// PENDING, assigned again; its worker is told only after a start is
// flushed). A start, a granted assignment with its start, a finish or a
// heartbeat that a crash could undo after the worker acted on it would let
// a run execute twice, so none of them may carry it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../pg/run_transitions_sql.h"

using baton::store::pg::statements;

TEST(UnflushedCommit, OnlyTheAssignmentBatchCommitsWithoutWaitingForItsFlush) {
  std::vector<std::string> unflushed;
  for (const auto& s : statements())
    if (s.sql.find("synchronous_commit") != std::string::npos) unflushed.emplace_back(s.name);
  EXPECT_EQ(unflushed, std::vector<std::string>{"run_assign_batch"})
      << "a fenced write other than the assignment batch commits unflushed";
  // Every other fenced write is here to be looked at: the list is the run
  // store's whole set, not a part of it.
  EXPECT_GE(statements().size(), 20u);
}
