// FakeRunDb's events and run-after dependencies: an event recorded once per
// dedupe key, the event a success sets off for the jobs that run after its
// job, and the leader's step that turns events into runs. The same rules as
// PgAdminStore::post_event, the success CTEs (store/pg/run_transitions.cpp)
// and PgLeaderStore::process_events, held together by
// store/tests/leader_store_contract_test.cpp.
#include <algorithm>

#include "baton/store_fake/fake_run_store.h"

namespace baton::store::fake {
namespace {

constexpr std::string_view upstream_prefix = "job.succeeded:";

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

std::int64_t FakeRunDb::post_event(const std::string& kind, const std::string& dedupe_key) {
  if (!dedupe_key.empty())
    for (const auto& e : events_)
      if (e.dedupe_key == dedupe_key) return e.id;
  const std::int64_t id = static_cast<std::int64_t>(events_.size()) + 1;
  events_.push_back({id, kind, dedupe_key, false});
  return id;
}

void FakeRunDb::on_success(const FakeRun& r) {
  if (!r.job_definition_id) return;
  const FakeJob* job = nullptr;
  for (const auto& [name, j] : jobs_)
    if (j.id == *r.job_definition_id) job = &j;
  if (job == nullptr) return;
  const bool followed = std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& d) {
    return !d.second.deleted && contains(d.second.run_after, job->name);
  });
  if (followed) post_event(std::string(upstream_prefix) + job->name, "run-succeeded:" + std::to_string(r.id.value));
}

EventsProcessed FakeRunDb::process_events(Epoch epoch, int limit) {
  EventsProcessed out;
  out.current_epoch = lease().epoch();
  if (epoch != lease().epoch()) return out;  // nothing written: the events wait for the next leader
  for (auto& e : events_) {
    if (out.events >= limit) break;
    if (e.processed) continue;
    const bool upstream = e.kind.starts_with(upstream_prefix);
    const std::string_view upstream_job = upstream ? std::string_view(e.kind).substr(upstream_prefix.size()) : "";
    for (const auto& [name, j] : jobs_) {
      if (j.deleted || !(contains(j.on_events, e.kind) || (upstream && contains(j.run_after, upstream_job)))) continue;
      // (job, event) is unique: a run already made of this event is not made again.
      const bool made = std::any_of(runs_.begin(), runs_.end(), [&](const auto& r) {
        return r.second.job_definition_id == j.id && r.second.event_id == e.id;
      });
      if (made) continue;
      NewRun n;
      n.job_definition_id = j.id;
      n.max_attempts = j.max_attempts;
      n.priority = j.priority;
      n.trigger_kind = "event";
      FakeRun& r = insert(epoch, n);
      r.event_id = e.id;
      ledger_.push_back({epoch, j.name, 0, 0, "created", "event", r.id});
      ++out.runs;
    }
    e.processed = true;
    ++out.events;
  }
  return out;
}

}  // namespace baton::store::fake
