#pragma once
// The fixture of the overlap-control tests against real PostgreSQL: jobs
// with limits and exclusions, their runs triggered, and assignments with the
// holds a leader would ask for.
#include <gtest/gtest.h>

#include "store_test_support.h"

namespace baton::store::pg::test {

class OverlapStoreTest : public ElectedStoreTest {
 protected:
  OverlapStoreTest() : ElectedStoreTest("overlap") {}

  /// `mutually_exclusive`: no two such runs at once (the exclusive lock).
  void job(const std::string& name, std::optional<int> max_instances, const std::string& policy = "allow",
           bool mutually_exclusive = false, std::optional<std::string> schedule = std::nullopt,
           bool exclusive_execution = false) {
    JobDefinition j;
    j.name = name;
    j.schedule = schedule;
    j.max_instances = max_instances;
    j.concurrency_policy = policy;
    j.mutually_exclusive = mutually_exclusive;
    j.exclusive_execution = exclusive_execution;
    j.parameter_rules_json = R"({"a": {}})";
    ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  }
  /// Jobs with nothing but a name (a BUILTIN NOOP), for tests about what
  /// happens to their runs.
  void plain_jobs(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      JobDefinition j;
      j.name = name;
      ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
    }
  }
  RunId run_of(const std::string& name) {
    auto r = admin.trigger(Actor{"test", epoch}, name, std::nullopt, std::nullopt);
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    return r ? r->run : RunId{0};
  }
  Result<BatchWriteResult> assign(RunId id, std::optional<int> instance, bool lock = false) {
    AssignRow row{id, Version{1}, RunState::pending, "w1"};
    row.instance_no = instance;
    row.exclusive_lock = lock;
    return runs.assign_batch(epoch, {row});
  }
  bool applied(const Result<BatchWriteResult>& r, RunId id) { return r && r->applied.count(id.value) == 1; }
  /// Assigns, starts and finishes each of `ids` in one statement: FAILED
  /// for good, retried (`retry`), or SUCCEEDED (`ok`).
  void end(const std::vector<RunId>& ids, bool ok, bool retry = false) {
    std::vector<FinishRow> rows;
    for (RunId id : ids) {
      auto a = assign(id, std::nullopt);
      ASSERT_TRUE(applied(a, id));
      const WriteResult& w = a->applied.at(id.value);
      auto s = runs.start_batch(epoch, {{id, w.new_version, {"w1", w.attempt, w.lease_token}, "i1"}}, Millis{5000});
      ASSERT_TRUE(s && s->applied.count(id.value) == 1);
      FinishRow fin{id,
                    s->applied.at(id.value).new_version,
                    {"w1", w.attempt, w.lease_token},
                    {},
                    retry ? std::optional<Millis>(Millis{60000}) : std::nullopt};
      if (!ok) fin.finish.final_state = RunState::failed;
      fin.finish.error_code = ok ? "" : "exit_3";
      rows.push_back(fin);
    }
    auto f = runs.finish_batch(epoch, rows);
    ASSERT_TRUE(f && f->applied.size() == ids.size());
  }
  void end(RunId id, bool ok, bool retry = false) { end(std::vector<RunId>{id}, ok, retry); }
};

}  // namespace baton::store::pg::test
