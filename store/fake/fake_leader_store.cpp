#include "baton/store_fake/fake_leader_store.h"

namespace baton::store::fake {

template <class T, class F>
Result<T> FakeLeaderStore::call(F&& f) {
  if (unavailable) return make_error(Errc::db_unavailable, "simulated partition");
  db_.use_partition(partition_);
  Result<T> out = f();  // f returns T, or Result<T> for a statement that can refuse its input
  if (lose_reply && lose_reply()) return make_error(Errc::outcome_unknown, "simulated lost reply");
  return out;
}

// Labels, selectors and exclusive jobs are not modelled (the header says so).
Result<std::vector<DueRun>> FakeLeaderStore::due_runs(int limit, const std::map<std::string, std::string>&,
                                                      Millis ahead,
                                                      const std::vector<std::map<std::string, std::string>>&) {
  return call<std::vector<DueRun>>([&] { return db_.due_runs(limit, ahead); });
}
Result<std::vector<ActiveRun>> FakeLeaderStore::active_runs(Millis continuation_margin) {
  return call<std::vector<ActiveRun>>([&] { return db_.active_runs(continuation_margin); });
}
Result<HeartbeatBatchResult> FakeLeaderStore::heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows,
                                                              Millis) {
  return call<HeartbeatBatchResult>([&] { return db_.heartbeat_batch(epoch, rows); });
}

Result<CreateResult> FakeLeaderStore::create_cron_run(Epoch epoch, const std::string& job, std::int64_t slot_unix,
                                                      bool caught_up, std::int64_t jitter_ms) {
  return call<CreateResult>([&] { return db_.create_cron_run(epoch, job, slot_unix, caught_up, jitter_ms); });
}
Result<CreateResult> FakeLeaderStore::skip_cron_slots(Epoch epoch, const std::string& job,
                                                      const std::vector<SkippedCronSlots>& ranges, const std::string&) {
  return call<CreateResult>([&] { return db_.skip_cron_slots(epoch, job, ranges); });
}
Result<EventsProcessed> FakeLeaderStore::process_events(Epoch epoch, int limit) {
  return call<EventsProcessed>([&] { return db_.process_events(epoch, limit); });
}
Result<std::vector<ScheduledJob>> FakeLeaderStore::scheduled_jobs() {
  return call<std::vector<ScheduledJob>>([&] { return db_.scheduled_jobs(); });
}

// Not modelled (the header says so): answered at once, with no fault drawn.
Result<CreateResult> FakeLeaderStore::record_decision(Epoch, RunId, const std::string&, const std::string&,
                                                      const std::string&) {
  return make_error(Errc::db_error, "no decision ledger in the fake leader store");
}
Result<void> FakeLeaderStore::record_fenced_out(Epoch, const std::string&, const std::vector<FencedOut>&) {
  return make_error(Errc::db_error, "no decision ledger in the fake leader store");
}
// No fence is judged: with nothing to prune it writes nothing.

Result<Pruned> FakeLeaderStore::prune(Epoch epoch, int) { return Pruned{epoch, 0, 0, 0, 0}; }
// No SQL submissions in the fake (an application's transaction is a
// PostgreSQL one; store/tests/sql_submission_test.cpp): none to take, and
// no inbox to wait on.
Result<SubmissionsProcessed> FakeLeaderStore::process_submissions(Epoch epoch, int, const std::vector<std::string>&) {
  return SubmissionsProcessed{epoch, 0, 0, 0};
}
Result<bool> FakeLeaderStore::await_inbox(Millis) { return false; }
// Accepted, not kept; refused while partitioned. No fault drawn.
Result<void> FakeLeaderStore::accepted() const {
  if (unavailable) return make_error(Errc::db_unavailable, "simulated partition");
  return {};
}
Result<void> FakeLeaderStore::worker_attached(const std::string&, const std::string&, int, const std::string&, Epoch) {
  return accepted();
}
Result<void> FakeLeaderStore::worker_detached(const std::string&, const std::string&, Epoch) { return accepted(); }
Result<void> FakeLeaderStore::workers_seen(const std::vector<std::string>&) { return accepted(); }
Result<void> FakeLeaderStore::append_run_log(RunId, int, const std::string&, const std::string&) { return accepted(); }
Result<void> FakeLeaderStore::append_run_output(const std::vector<OutputChunk>&, std::int64_t) { return accepted(); }

// Reads of what is not modelled: empty, but cut off or lost like any read.
Result<std::vector<DueRun>> FakeLeaderStore::unmatched_runs(const std::vector<std::map<std::string, std::string>>&,
                                                            int) {
  return call<std::vector<DueRun>>([] { return std::vector<DueRun>{}; });
}
Result<std::vector<DueRun>> FakeLeaderStore::waiting_runs(int) {
  return call<std::vector<DueRun>>([] { return std::vector<DueRun>{}; });
}
Result<Controls> FakeLeaderStore::read_controls() {
  return call<Controls>([] { return Controls{}; });
}

}  // namespace baton::store::fake
