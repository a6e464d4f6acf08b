// RunBook: workers attaching, welcomed (their runs adopted or judged),
// detaching, and the registry of who was seen.
#include "baton/leader_core/run_book.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "baton/base/assert.h"
#include "baton/base/json_text.h"
#include "baton/leader_core/dispatch.h"
#include "baton/leader_core/input_journal.h"
#include "baton/leader_core/output_archive_path.h"
#include "baton/protocol/codec.h"
#include "baton/protocol/vocabulary.h"
#include "run_book_detail.h"

namespace baton::leader_core {

using namespace run_book_detail;

// --- workers ----------------------------------------------------------------

void RunBook::start(MonoTime now) {
  if (journal_) journal_->start(now);
  now_ = now;
  log(LogLevel::info, fmt::format("control_loop_start node={} epoch={}", node_id_, epoch_.value));
  with_fresh_view(resume::RefreshOnly{});
  after_input();
}

void RunBook::attached(LinkId link, const protocol::Hello& hello, MonoTime now) {
  if (journal_) journal_->attached(link, hello, now);
  now_ = now;
  const std::string& id = hello.worker_id;
  if (auto old = workers_.find(id); old != workers_.end() && old->second.link != link) {
    // Two live processes using one worker id would each make the other's
    // attempts look lost: while the connection we have is alive and from
    // another process (not a reconnect, not its successor on the same
    // spool), the newcomer is refused. Otherwise the newest connection wins.
    const Attached& was = old->second;
    const bool other_process = !was.instance.empty() && !hello.instance.empty() && was.instance != hello.instance &&
                               hello.succeeds != was.instance;
    if (other_process && now_ - was.last_seen < was.cadence.timeout) {
      count(Counter::protocol_errors);
      log(LogLevel::error,
          fmt::format("worker_refused_duplicate_id worker={} instance={} attached_instance={} epoch={}", json_quote(id),
                      json_quote(hello.instance), json_quote(was.instance), epoch_.value));
      send_link(link, protocol::Error{"duplicate_worker_id", "worker id '" + id +
                                                                 "' is in use by another attached worker process; "
                                                                 "every worker needs an id of its own"});
      emit(Close{link, "duplicate worker id"});
      return after_input();
    }
    emit(Close{old->second.link, "replaced by a newer connection of the same worker"});
  }
  if (is_evicted(id)) {
    // An operator evicted it: its RUNNING attempts go through the
    // continuation rules (its own dead-man's switch stops them) and are
    // retried elsewhere. It may attach again once resumed.
    log(LogLevel::warn, fmt::format("worker_refused_evicted worker={} epoch={}", json_quote(id), epoch_.value));
    send_link(link, protocol::Error{"worker_evicted", "worker '" + id +
                                                          "' was evicted by an operator; resume it "
                                                          "(POST /api/v1/workers/{worker}/resume) to attach it again"});
    emit(Close{link, "evicted"});
    return after_input();
  }
  workers_[id] = Attached{link, hello.capacity, hello.labels,   now_,          false, false,
                          0,    hello.instance, hello.succeeds, hello.prefetch};
  workers_[id].protocol = protocol::negotiate_version(protocol::protocol_version_min, protocol::protocol_version_max,
                                                      hello.protocol_min, hello.protocol_max)
                              .value_or(protocol::protocol_version_min);
  workers_[id].cadence = heartbeat_cadence(workers_.size(), cfg_);
  workers_[id].recorded = now_;
  emit(RecordWorker{id, true, json_object(hello.labels), hello.capacity});
  // Adopt what the worker is still executing before welcoming it: the
  // welcome names the adopted attempts, and only those restart their
  // continuation clock on the worker. Anything it runs that is no longer its
  // attempt is killed (no two attempts of a run at once) -- but only on a
  // fresh read: a failed read proves nothing about a run.
  with_fresh_view(resume::WelcomeAfterRead{id, link, hello});
  after_input();
}

void RunBook::viewed(resume::WelcomeAfterRead& s, bool fresh) { welcome(s.worker, s.link, s.hello, fresh); }

void RunBook::welcome(const std::string& worker, LinkId link, const protocol::Hello& hello, bool fresh) {
  auto w = workers_.find(worker);
  if (w == workers_.end() || w->second.link != link) return;  // gone, or replaced, meanwhile
  // Its listing count starts over on this connection.
  for (auto& [rid, t] : tracked_)
    if (t.row.worker_id == worker) mark_listed(t);
  auto p = std::make_shared<resume::PendingWelcome>();
  p->worker = worker;
  p->link = link;
  p->running = hello.running.size();
  p->finished = hello.finished.size();
  p->capacity = hello.capacity;
  p->welcome = protocol::Welcome{node_id_,
                                 epoch_.value,
                                 w->second.cadence.interval.count(),
                                 w->second.cadence.timeout.count(),
                                 cfg_.continuation_timeout.count(),
                                 cfg_.continuation_margin.count(),
                                 {}};
  for (const auto& ref : hello.finished) adopt_ended(worker, ref);
  std::vector<protocol::AttemptRef> ours;
  for (const auto& ref : hello.running) {
    auto it = tracked_.find(ref.run_id);
    if (it != tracked_.end() && held_by(it->second.row, RunState::running, worker, ref)) {
      note_holder(it->second);
      ours.push_back(ref);
    } else if (fresh || it != tracked_.end()) {
      p->stale.push_back(ref);
    }
  }
  if (ours.empty()) return send_welcome(*p);
  p->waiting = ours.size();
  for (const auto& ref : ours) adopt_if_needed(ref.run_id, resume::WelcomeAfterAdopt{p, ref});
}

void RunBook::adopted(resume::WelcomeAfterAdopt& s, bool adopted) {
  if (adopted) s.pending->welcome.adopted.push_back(s.ref);
  if (--s.pending->waiting == 0) send_welcome(*s.pending);
}

void RunBook::send_welcome(resume::PendingWelcome& p) {
  auto w = workers_.find(p.worker);
  if (w == workers_.end() || w->second.link != p.link) return;  // gone, or replaced, meanwhile
  w->second.welcomed = true;
  send_link(p.link, p.welcome);
  // Cancels requested while it was away.
  for (const auto& ref : p.welcome.adopted)
    if (auto c = cancel_requested_.find(ref.run_id); c != cancel_requested_.end())
      send_link(p.link, protocol::Cancel{ref, c->second});
  log(LogLevel::info,
      fmt::format("worker_attached worker={} capacity={} running={} finished={} adopted={} epoch={}",
                  json_quote(p.worker), p.capacity, p.running, p.finished, p.welcome.adopted.size(), epoch_.value));
  for (const auto& ref : p.stale) {
    log(LogLevel::info, fmt::format("stale_attempt_cancel run={} attempt={} worker={} epoch={}", ref.run_id,
                                    ref.attempt, json_quote(p.worker), epoch_.value));
    send_link(p.link, protocol::Cancel{ref, "attempt is no longer current"});
  }
}

void RunBook::drop_worker(const std::string& worker, const char* why) {
  auto it = workers_.find(worker);
  if (it == workers_.end()) return;
  emit(Close{it->second.link, why});
  workers_.erase(it);
  emit(RecordWorker{worker, false, {}, 0});
  log(LogLevel::info,
      fmt::format("worker_detached worker={} reason={} epoch={}", json_quote(worker), why, epoch_.value));
}

void RunBook::detached(LinkId link, const std::string& worker, const std::string& why, MonoTime now) {
  if (journal_) journal_->detached(link, worker, why, now);
  now_ = now;
  auto it = workers_.find(worker);
  if (it != workers_.end() && it->second.link == link) drop_worker(worker, why.c_str());
  after_input();
}

void RunBook::record_workers_seen() {
  // Workers heard from since their last heartbeat was recorded, the ones
  // recorded longest ago first, at most the round's share of the row budget:
  // the registry is what operators read, liveness is judged here.
  std::vector<std::pair<MonoTime, const std::string*>> due;
  for (const auto& [id, w] : workers_)
    if (w.last_seen > w.recorded) due.emplace_back(w.recorded, &id);
  const auto budget = static_cast<std::size_t>(std::max<std::int64_t>(
      1, std::int64_t{cfg_.workers_seen_rows_per_second} * cfg_.workers_seen_every.count() / 1000));
  if (due.size() > budget) {
    std::nth_element(due.begin(), due.begin() + static_cast<std::ptrdiff_t>(budget), due.end());
    due.resize(budget);
  }
  if (due.empty()) return;
  RecordWorkersSeen seen;
  seen.worker_ids.reserve(due.size());
  for (const auto& [at, id] : due) {
    seen.worker_ids.push_back(*id);
    workers_.at(*id).recorded = now_;
  }
  emit(std::move(seen));
}

void RunBook::detach_silent() {
  // Workers that stopped talking are detached (their runs go through the
  // reaper like any detach), each after the timeout its welcome gave it.
  std::vector<std::string> silent;
  for (const auto& [id, w] : workers_)
    if (now_ - w.last_seen > w.cadence.timeout) silent.push_back(id);
  for (const auto& id : silent) drop_worker(id, "heartbeat_timeout");
}

void RunBook::mark_listed(Tracked& t) {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end()) return;
  t.link = w->second.link;
  t.listed_at = w->second.heartbeats;
}

void RunBook::note_holder(Tracked& t) {
  if (auto w = workers_.find(t.row.worker_id); w != workers_.end()) t.holder = w->second.instance;
  t.grant_in_flight.reset();  // its worker has it: the assign frame arrived
}

bool RunBook::speaks_for(const Tracked& t) const {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end()) return false;
  return t.holder.empty() || w->second.instance.empty() || w->second.instance == t.holder ||
         w->second.succeeds == t.holder;
}

std::int64_t RunBook::unlisted_heartbeats(Tracked& t) {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end() || !speaks_for(t)) return 0;
  if (t.grant_in_flight) {
    // Its assign frame may still be on its way: a worker that has not had
    // it yet lists nothing, and would start it on arrival. Only once the
    // connection that carries it is gone can no such frame arrive.
    if (*t.grant_in_flight == w->second.link) return 0;
    t.grant_in_flight.reset();
  }
  if (t.link != w->second.link) mark_listed(t);  // a new connection: count from now
  return static_cast<std::int64_t>(w->second.heartbeats - t.listed_at);
}

void RunBook::adopt_ended(const std::string& worker, const protocol::AttemptRef& ref) {
  // An attempt its worker holds as ended, with the finish not yet written
  // (the write failed, the database was away, the frame was lost with its
  // connection): the worker is back, so the attempt is this leader's again --
  // adopted, its CONFIRMING deadline cleared -- and its finish (sent again
  // within finish_resend_after) is written. Left CONFIRMING, the deadline
  // would throw the success away while the worker that holds it is attached.
  auto it = tracked_.find(ref.run_id);
  if (it != tracked_.end() && held_by(it->second.row, RunState::running, worker, ref) &&
      it->second.row.continuation == ContinuationState::confirming)
    adopt_if_needed(ref.run_id, resume::AdoptOnly{});
}

void RunBook::adopt_if_needed(std::int64_t run, resume::AfterAdopt then) {
  auto it = tracked_.find(run);
  if (it == tracked_.end()) return std::visit([&](auto& s) { adopted(s, false); }, then);
  const store::ActiveRun& r = it->second.row;
  if (r.leader_epoch == epoch_ && r.continuation == ContinuationState::none)
    return std::visit([&](auto& s) { adopted(s, true); }, then);
  WriteRun w;
  w.kind = RunWriteKind::adopt;
  w.fence = {r.id, r.version, epoch_};
  w.attempt = {r.worker_id, r.attempt, r.lease_token};
  store::AttemptFence att = w.attempt;
  write(std::move(w), resume::AdoptWrite{run, std::move(att), std::move(then)});
}

void RunBook::resumed(resume::AdoptWrite& s, const Result<store::WriteResult>& res) {
  auto then = [&](bool adopted_now) { std::visit([&](auto& t) { adopted(t, adopted_now); }, s.then); };
  if (!note("adopt", s.run, res)) return then(false);
  auto it = tracked_.find(s.run);
  if (it == tracked_.end() || it->second.row.attempt != s.attempt.attempt ||
      it->second.row.lease_token != s.attempt.lease_token) {
    distrust();  // the copy moved on meanwhile
    return then(false);
  }
  store::ActiveRun& r = it->second.row;
  r.version = res->new_version;
  r.leader_epoch = epoch_;
  r.continuation = ContinuationState::none;
  log(LogLevel::info, fmt::format("run_adopted run={} attempt={} worker={} epoch={}", s.run, s.attempt.attempt,
                                  json_quote(s.attempt.worker_id), epoch_.value));
  then(true);
}

void RunBook::adopted(resume::AdoptOnly&, bool) {}

}  // namespace baton::leader_core
