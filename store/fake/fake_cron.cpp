// FakeRunDb's cron: the job definitions' cron columns, a slot's run with its
// cursor and ledger entry, skipped ranges. The same rules as PgLeaderStore's
// create_cron_run and skip_cron_slots (store/pg/pg_leader_store.cpp), held
// together by store/tests/leader_store_contract_test.cpp.
#include <algorithm>
#include <chrono>

#include "baton/store_fake/fake_run_store.h"

namespace baton::store::fake {
namespace {

/// The fake's wall clock at its monotonic zero: 2026-01-01T00:00:00Z.
constexpr std::int64_t unix_ms_at_zero = 1'767'225'600'000;

}  // namespace

std::int64_t FakeRunDb::unix_ms() const {
  return unix_ms_at_zero + std::chrono::duration_cast<std::chrono::milliseconds>(clock_.mono().since_start).count();
}

Result<FakeJob*> FakeRunDb::live_job(const std::string& name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end() || it->second.deleted) return make_error(Errc::bad_input, "unknown job '" + name + "'");
  return &it->second;
}

std::int64_t FakeRunDb::define_job(FakeJob job) {
  job.id = next_job_id_++;
  const std::int64_t id = job.id;
  jobs_[job.name] = std::move(job);
  return id;
}

void FakeRunDb::delete_job(const std::string& name) {
  if (auto it = jobs_.find(name); it != jobs_.end()) it->second.deleted = true;
}

std::vector<ScheduledJob> FakeRunDb::scheduled_jobs() const {
  std::vector<ScheduledJob> out;
  const std::int64_t now_ms = unix_ms();
  for (const auto& [name, j] : jobs_) {
    if (j.deleted || j.schedule.empty()) continue;
    ScheduledJob s;
    s.id = j.id;
    s.name = j.name;
    s.schedule = j.schedule;
    s.time_zone = j.time_zone;
    s.misfire_policy = j.misfire_policy;
    s.last_slot_unix = j.cron_cursor;
    s.catch_up_limit = j.catch_up_limit;
    s.starting_deadline_ms = j.starting_deadline_ms;
    s.jitter_ms = j.jitter_ms;
    s.now_unix = now_ms / 1000;
    s.now_unix_ms = now_ms;
    out.push_back(std::move(s));
  }
  return out;
}

Result<CreateResult> FakeRunDb::create_cron_run(Epoch epoch, const std::string& job, std::int64_t slot_unix,
                                                bool caught_up, std::int64_t jitter_ms) {
  auto found = live_job(job);
  if (!found) return found.error();
  FakeJob& j = **found;
  CreateResult out;
  out.current_epoch = lease().epoch();
  if (epoch != lease().epoch()) {
    out.outcome = WriteOutcome::fenced;  // no run, no cursor, no ledger entry
    return out;
  }
  // The job's unfinished runs other than this slot's, for the policies that
  // use them: forbid skips the slot while there are any, replace names them
  // for the caller to cancel.
  std::vector<RunId> busy;
  bool exists = false;
  for (const auto& [id, r] : runs_) {
    if (r.job_definition_id != j.id) continue;
    if (r.slot_unix == slot_unix) exists = true;
    if ((j.concurrency_policy == "forbid" || j.concurrency_policy == "replace") && !is_terminal(r.state) &&
        r.slot_unix != slot_unix)
      busy.push_back(r.id);
  }
  const bool forbid = j.concurrency_policy == "forbid" && !busy.empty();
  out.outcome = WriteOutcome::conflict;  // the slot's run exists (unique job, slot), or forbid
  if (!exists && !forbid) {
    NewRun n;
    n.job_definition_id = j.id;
    n.max_attempts = j.max_attempts;
    n.priority = j.priority;
    n.trigger_kind = "cron";
    FakeRun& r = insert(epoch, n);
    r.slot_unix = slot_unix;
    r.starts_at_unix_ms = slot_unix * 1000 + std::max<std::int64_t>(0, jitter_ms);
    out.outcome = WriteOutcome::applied;
    out.run = r.id;
    ledger_.push_back({epoch, j.name, slot_unix, slot_unix, "created", caught_up ? "caught_up" : "on_time", r.id});
    if (j.concurrency_policy == "replace") out.replaced = busy;
  }
  if (forbid && !exists)
    ledger_.push_back({epoch, j.name, slot_unix, slot_unix, "skipped", "concurrency_forbid", std::nullopt});
  out.forbidden = forbid;
  // The cursor moves even when the slot's run already exists (a previous
  // leader created it).
  j.cron_cursor = std::max(j.cron_cursor.value_or(slot_unix), slot_unix);
  return out;
}

Result<CreateResult> FakeRunDb::skip_cron_slots(Epoch epoch, const std::string& job,
                                                const std::vector<SkippedCronSlots>& ranges) {
  auto found = live_job(job);
  if (!found) return found.error();
  FakeJob& j = **found;
  CreateResult out;
  out.current_epoch = lease().epoch();
  if (epoch != lease().epoch()) {
    out.outcome = WriteOutcome::fenced;  // no ledger entry, no cursor
    return out;
  }
  out.outcome = WriteOutcome::applied;
  for (const auto& r : ranges) {
    ledger_.push_back({epoch, j.name, r.first_unix, r.last_unix, "skipped", r.reason, std::nullopt});
    j.cron_cursor = std::max(j.cron_cursor.value_or(r.last_unix), r.last_unix);
  }
  return out;
}

}  // namespace baton::store::fake
