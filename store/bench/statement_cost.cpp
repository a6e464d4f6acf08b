// What the run's own statements cost the database, without the rest of a
// cluster around them (bench/statement-cost drives it): one leader, one
// job, and ROUNDS batches of BATCH runs each created, assigned, started and
// finished through the fenced store API, one statement per step as the
// leader writes them under load. One client and a fixed batch size, so the
// database's time per statement is steady from run to run, where the
// throughput phase's depends on how the batches happened to fill
// (docs/performance.md, "Statement costs measured apart").
//
//   baton-statement-cost URL ROUNDS BATCH [grant]
//
// `grant`: the assignment carries the start (a worker with free slots), so
// there is no separate start statement. Prints the runs it moved; the
// database's side is read by the script (pg_stat_statements).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "baton/store_pg/pg_admin_store.h"
#include "baton/store_pg/pg_lease_store.h"
#include "baton/store_pg/pg_run_store.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "baton-statement-cost: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T ok(Result<T> r, const char* what) {
  if (!r) fail(std::string(what) + ": " + r.error().message);
  return std::move(*r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) fail("usage: baton-statement-cost URL ROUNDS BATCH [grant]");
  const std::string url = argv[1];
  const int rounds = std::atoi(argv[2]);
  const int batch = std::atoi(argv[3]);
  const bool grant = argc > 4 && std::string(argv[4]) == "grant";
  if (rounds < 1 || batch < 1) fail("ROUNDS and BATCH must be at least 1");

  PgLeaseStore lease(url, "statement-cost");
  const auto won = ok(lease.campaign(NodeIdentity{"bench", "bench-1", "bench:1"}, Millis{3'600'000}), "campaign");
  if (!won.won) fail("another node holds the lease");
  const Epoch epoch = won.lease.epoch;

  PgAdminStore admin(url, "statement-cost");
  JobDefinition job;
  job.name = "statement-cost";
  ok(admin.create_job(Actor{"bench", epoch}, job), "create_job");
  PgRunStore runs(url, "statement-cost");

  const std::string result = R"({"tasks":[{"name":"noop","outcome":"SUCCEEDED","exit_code":0,"duration_ms":0}]})";
  long moved = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<AssignRow> assign;
    for (int i = 0; i < batch; ++i) {
      // Made as an application's trigger makes it (its statement is not
      // among those measured).
      const auto t = ok(admin.trigger(Actor{"bench", epoch}, job.name, std::nullopt, std::nullopt), "trigger");
      if (t.outcome != WriteOutcome::applied) fail("trigger: not applied");
      AssignRow a{t.run, Version{1}, RunState::pending, "w1"};
      if (grant) a.start = StartGrant{"i1", Millis{30'000}};
      assign.push_back(a);
    }
    const auto assigned = ok(runs.assign_batch(epoch, assign), "assign_batch");
    std::vector<StartRow> start;
    std::vector<FinishRow> finish;
    for (const auto& [id, w] : assigned.applied) {
      if (grant) {
        finish.push_back(FinishRow{RunId{id}, w.new_version, {"w1", w.attempt, w.lease_token}, {}, std::nullopt});
        continue;
      }
      start.push_back(StartRow{RunId{id}, w.new_version, {"w1", w.attempt, w.lease_token}, "i1"});
    }
    if (!grant) {
      const auto started = ok(runs.start_batch(epoch, start, Millis{30'000}), "start_batch");
      for (const auto& [id, w] : started.applied)
        finish.push_back(FinishRow{RunId{id}, w.new_version, {"w1", w.attempt, w.lease_token}, {}, std::nullopt});
    }
    for (auto& f : finish) {
      f.finish.exit_code = 0;
      f.finish.result_json = result;
    }
    const auto finished = ok(runs.finish_batch(epoch, finish), "finish_batch");
    moved += static_cast<long>(finished.applied.size());
  }
  std::printf("%ld\n", moved);
  return moved == static_cast<long>(rounds) * batch ? 0 : 1;
}
