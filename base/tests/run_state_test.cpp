#include "baton/base/run_state.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

using namespace baton;
using S = RunState;

// SPEC section 3 plus documented additions (docs/fencing.md): a late
// success, RETRY_WAITING -> SUCCEEDED, and an unrunnable run failed where it
// waits, PENDING / RETRY_WAITING -> FAILED.
TEST(RunState, TransitionTableIsSpecSection3PlusDocumentedAdditions) {
  const std::set<std::pair<S, S>> allowed = {
      {S::pending, S::assigned},        {S::pending, S::canceled},       {S::assigned, S::running},
      {S::assigned, S::orphaned},       {S::assigned, S::canceled},      {S::orphaned, S::assigned},
      {S::orphaned, S::failed},         {S::orphaned, S::canceled},      {S::running, S::succeeded},
      {S::running, S::failed},          {S::running, S::timed_out},      {S::running, S::retry_waiting},
      {S::running, S::canceled},        {S::retry_waiting, S::assigned}, {S::retry_waiting, S::canceled},
      {S::retry_waiting, S::succeeded}, {S::pending, S::failed},         {S::retry_waiting, S::failed},
  };
  int legal = 0;
  for (S from : all_run_states)
    for (S to : all_run_states) {
      EXPECT_EQ(legal_transition(from, to), allowed.count({from, to}) == 1) << to_string(from) << "->" << to_string(to);
      legal += legal_transition(from, to);
    }
  EXPECT_EQ(legal, 18);
}

TEST(RunState, TerminalStatesHaveNoExit) {
  for (S from : all_run_states) {
    if (!is_terminal(from)) continue;
    for (S to : all_run_states) EXPECT_FALSE(legal_transition(from, to));
  }
}

TEST(RunState, NamesRoundTrip) {
  for (S s : all_run_states) EXPECT_EQ(parse_run_state(to_string(s)), s);
  EXPECT_FALSE(parse_run_state("running").has_value());
}

TEST(RunState, BackoffDoublesThenCaps) {
  using std::chrono::milliseconds;
  const milliseconds base{1000}, cap{60000}, none{0};
  EXPECT_EQ(retry_backoff(1, base, cap, none), milliseconds{1000});
  EXPECT_EQ(retry_backoff(2, base, cap, none), milliseconds{2000});
  EXPECT_EQ(retry_backoff(5, base, cap, none), milliseconds{16000});
  EXPECT_EQ(retry_backoff(7, base, cap, none), milliseconds{60000});
  // The exponent stops at 10 (seed 003), so huge attempts cannot overflow.
  EXPECT_EQ(retry_backoff(1000, milliseconds{1}, milliseconds{1'000'000}, none), milliseconds{1024});
  EXPECT_EQ(retry_backoff(3, base, cap, milliseconds{250}), milliseconds{4250});
}
