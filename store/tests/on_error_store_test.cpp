// A job's on_error in the database (schemas/0034), against real PostgreSQL:
// a run that fails for good makes one run of the job its job names, in the
// statement that ends it, with what failed as its parameters; a retry does
// not, a success does not, and a failing handler makes no other.
#include <gtest/gtest.h>

#include "overlap_fixture.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class OnErrorStoreTest : public OverlapStoreTest {
 protected:
  void job_with_handler(const std::string& name, const std::optional<std::string>& on_error) {
    JobDefinition j;
    j.name = name;
    j.on_error = on_error;
    ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  }
  std::string handler_runs() {
    return text(
        "SELECT coalesce(string_agg(r.trigger_kind || ' ' || coalesce(r.payload->>'failed_run', '-') || ' ' ||"
        " coalesce(r.payload->>'failed_job', '-') || ' ' || coalesce(r.payload->>'final_state', '-'), ', '"
        " ORDER BY r.id), '-')"
        " FROM job_runs r JOIN job_definitions j ON j.id = r.job_definition_id WHERE j.name = 'notify'");
  }
};

TEST_F(OnErrorStoreTest, ARunThatFailsForGoodMakesOneRunOfTheHandler) {
  job_with_handler("notify", std::nullopt);
  job_with_handler("etl", std::string("notify"));
  const RunId retried = run_of("etl"), failed = run_of("etl"), ok = run_of("etl");
  end(retried, false, true);
  EXPECT_EQ(handler_runs(), "-") << "a failure that is retried is not the end";
  end(failed, false);
  EXPECT_EQ(handler_runs(), "on_error " + std::to_string(failed.value) + " etl FAILED");
  end(ok, true);
  EXPECT_EQ(handler_runs(), "on_error " + std::to_string(failed.value) + " etl FAILED") << "a success makes none";
  // The handler's run reads what failed as its parameters.
  auto due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  auto handler = std::find_if(due->begin(), due->end(), [](const DueRun& d) { return d.job_name == "notify"; });
  ASSERT_NE(handler, due->end());
  EXPECT_EQ(handler->parameters.at("failed_run"), std::to_string(failed.value));
  EXPECT_EQ(handler->parameters.at("error_code"), "exit_3");
}

TEST_F(OnErrorStoreTest, AFailingHandlerMakesNoOtherAndAnUnrunnableRunCountsAsAFailure) {
  job_with_handler("notify", std::string("notify"));  // its own handler
  const RunId first = run_of("notify");
  end(first, false);
  EXPECT_EQ(handler_runs(), "api - - -, on_error " + std::to_string(first.value) + " notify FAILED");
  const RunId handler{std::stoll(text("SELECT max(id) FROM job_runs"))};
  end(handler, false);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), "2") << "a failing handler makes no other run";
  // A run that can never be dispatched fails for good too (another statement).
  const RunId unrunnable = run_of("notify");
  ASSERT_EQ(runs.fail_unrunnable({unrunnable, Version{1}, epoch}, RunState::pending, "bad_definition", "test")->outcome,
            WriteOutcome::applied);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs WHERE trigger_kind = 'on_error'"), "2");
}

}  // namespace
