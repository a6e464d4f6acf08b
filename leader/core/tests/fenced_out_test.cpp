// What a fenced book meant to write (RunBook::fenced_out): each write the
// database refused for a newer epoch, with the runs it named, kept for the
// decision ledger, which the node writes once it no longer leads.
#include <gtest/gtest.h>

#include "baton/leader_core/run_book.h"
#include "run_book_driver.h"

namespace baton::leader_core {
namespace {

using namespace std::chrono_literals;
using namespace run_book_testing;

TEST(FencedOut, ARefusedBatchIsKeptWithItsRunsAndTheNewEpoch) {
  Driver d;
  d.start();
  d.attach(7, hello("w1"));
  d.due = {due_run(5, 1), due_run(6, 1)};
  auto assigns = all<WriteAssigns>(d.tick(100ms));
  ASSERT_EQ(assigns.size(), 1u);
  EXPECT_TRUE(d.book.fenced_out().empty()) << "nothing refused yet";
  d.answer(assigns[0].op, batch(Epoch{4}, {}));
  ASSERT_TRUE(d.book.fenced());
  ASSERT_EQ(d.book.fenced_out().size(), 1u);
  const store::FencedOut& f = d.book.fenced_out()[0];
  EXPECT_EQ(f.op, "assign_batch");
  EXPECT_EQ(f.runs, (std::vector<RunId>{RunId{5}, RunId{6}}));
  EXPECT_EQ(f.current_epoch, Epoch{4});
  EXPECT_EQ(f.subject, "") << "a run's write is named by its runs";
}

}  // namespace
}  // namespace baton::leader_core
