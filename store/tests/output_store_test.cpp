// Streamed output against real PostgreSQL: chunks are placed by offset
// (resends and a finish's overlapping tail logged once, a gap noted, text
// past the per-stream bound left to the archive with one note), and a
// finish whose result names a log_ref records it on the run.
#include <gtest/gtest.h>

#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class OutputStoreTest : public ElectedStoreTest {
 protected:
  OutputStoreTest() : ElectedStoreTest("output") {
    JobDefinition j;
    j.name = "printer";
    EXPECT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  }
  /// The run's log as one text per stream, in order ("stdout:..." lines).
  std::string log(RunId run) {
    return text(
        "SELECT coalesce(string_agg(stream || ':' || chunk, '|' ORDER BY id), '') FROM run_logs WHERE run_id = " +
        std::to_string(run.value));
  }
  OutputChunk out(RunId run, const std::string& stream, std::int64_t offset, const std::string& data) {
    return {run, 1, stream, offset, data};
  }
};

}  // namespace

TEST_F(OutputStoreTest, ChunksArePlacedByOffsetOncePerByte) {
  const RunId id = admin.trigger(Actor{"test", epoch}, "printer", std::nullopt, std::nullopt)->run;
  ASSERT_TRUE(leader.append_run_output({out(id, "stdout", 0, "one\n"), out(id, "stderr", 0, "warn\n")}, 1 << 20));
  // A reconnect resends the window, cut differently; then new text.
  ASSERT_TRUE(leader.append_run_output({out(id, "stdout", 0, "one\ntw"), out(id, "stdout", 6, "o\n")}, 1 << 20));
  // A leader missed frames: the gap is noted; the finish's tail overlaps.
  ASSERT_TRUE(leader.append_run_output({out(id, "stdout", 12, "four\n")}, 1 << 20));
  ASSERT_TRUE(leader.append_run_output({out(id, "stdout", 14, "ur\n")}, 1 << 20));
  EXPECT_EQ(log(id),
            "stdout:one\n|stderr:warn\n|stdout:tw|stdout:o\n|stdout:[baton: 4 bytes of stdout were lost]\n|"
            "stdout:four\n");
}

TEST_F(OutputStoreTest, TextPastTheBoundIsLeftToTheArchive) {
  const RunId id = admin.trigger(Actor{"test", epoch}, "printer", std::nullopt, std::nullopt)->run;
  ASSERT_TRUE(leader.append_run_output({out(id, "stdout", 0, "0123456789"), out(id, "stdout", 10, "abcdef")}, 12));
  ASSERT_TRUE(leader.append_run_output({out(id, "stdout", 16, "more")}, 12));
  EXPECT_EQ(log(id),
            "stdout:0123456789|stdout:ab|stdout:\n[baton: stdout past 12 bytes is kept in the log archive only]\n");
  EXPECT_EQ(text("SELECT count(*) FROM run_logs WHERE run_id = " + std::to_string(id.value)), "3");
}

TEST_F(OutputStoreTest, AFinishRecordsTheLogRefItsResultNames) {
  const RunId id = admin.trigger(Actor{"test", epoch}, "printer", std::nullopt, std::nullopt)->run;
  auto a = runs.assign({id, Version{1}, epoch}, "w1");
  AttemptFence f{"w1", a->attempt, a->lease_token};
  auto s = runs.start({id, a->new_version, epoch}, f, Millis{1000});
  FinishRow row{id, s->new_version, f, {}, std::nullopt};
  row.finish.result_json = R"({"duration_ms":5,"log_ref":"runs/0/)" + std::to_string(id.value) + R"(","tasks":[]})";
  auto w = runs.finish_batch(epoch, {row});
  ASSERT_TRUE(w);
  ASSERT_EQ(w->applied.count(id.value), 1u);
  EXPECT_EQ(text("SELECT log_ref FROM job_runs WHERE id = " + std::to_string(id.value)),
            "runs/0/" + std::to_string(id.value));
  // Without one, nothing is recorded.
  const RunId other = admin.trigger(Actor{"test", epoch}, "printer", std::nullopt, std::nullopt)->run;
  a = runs.assign({other, Version{1}, epoch}, "w1");
  f = {"w1", a->attempt, a->lease_token};
  s = runs.start({other, a->new_version, epoch}, f, Millis{1000});
  Finish fin;
  EXPECT_EQ(runs.finish({other, s->new_version, epoch}, f, fin)->outcome, WriteOutcome::applied);
  EXPECT_EQ(text("SELECT log_ref FROM job_runs WHERE id = " + std::to_string(other.value)), "NULL");
}
