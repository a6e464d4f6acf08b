// RunBook, the pass: what tick() sets going once the inbox is drained, and
// the periodic work that is neither reaping (run_book_reaper.cpp), cron
// (run_book_cron.cpp) nor dispatch (run_book_dispatch.cpp): events into
// runs and retention.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "baton/base/json_text.h"
#include "baton/leader_core/input_journal.h"
#include "baton/leader_core/run_book.h"
#include "run_book_detail.h"

namespace baton::leader_core {

using namespace run_book_detail;

// --- the pass ---------------------------------------------------------------

void RunBook::dispatch_now() {
  if (journal_) journal_->dispatch_now();
  pass_.dispatch_requested = true;
  after_input();
}

void RunBook::created(const std::vector<store::DueRun>& runs, MonoTime now) {
  if (journal_) journal_->created(runs, now);
  now_ = now;
  // A pass under way may be reading or assigning: its capacity view is not
  // whole until its writes return, and the pass's own dispatch reads these
  // runs anyway.
  if (!fencing_.fenced && !runs.empty() && controls_ && controls_->dispatch_enabled && pass_outstanding() == 0)
    dispatch_due(runs);
  else
    pass_.dispatch_requested = true;
  after_input();
}

void RunBook::tick(MonoTime now) {
  if (journal_) journal_->tick(now);
  now_ = now;
  while (!wakeups_.empty() && *wakeups_.begin() <= now_) {
    wakeups_.erase(wakeups_.begin());
    pass_.dispatch_requested = true;  // a cron slot is due now (or an early start's time: flush_starts)
  }
  // The lanes never wait for a pass: what queued since the last tick goes
  // out on each free lane now, even while the pass before is still waiting
  // for a read or its assignment (the shell may write those on a lane too).
  flush_finishes();
  flush_starts();
  // One pass at a time, its steps in order: a tick while one is under way
  // only flushed the lanes, and the next tick begins the next pass.
  if (!pass_.under_way) {
    pass_.steps = step_silent | step_reap | step_heartbeats | step_cron | step_controls | step_dispatch;
    pass_.under_way = true;
    cron_.new_pass();
  }
  after_input();
}

// --- the decision ledger ------------------------------------------------------

void RunBook::inbox_noticed() {
  if (journal_) journal_->inbox_noticed();
  pass_.inbox_requested = true;
  after_input();
}

void RunBook::process_inbox() {
  // A notice and the cron period may both ask in one step: one take of
  // each in flight at a time.
  pass_.inbox_requested = false;
  if (live_.events_enabled && awaiting_.events.empty()) process_events();
  if (!awaiting_.submissions.empty()) return;
  const OpId op = next_op();
  awaiting_.submissions.emplace(op, resume::SubmissionsProcessing{});
  emit(ProcessSubmissions{op, submission_batch, cfg_.payload_denylist});
}

void RunBook::resumed(resume::SubmissionsProcessing&, const Result<store::SubmissionsProcessed>& r) {
  if (!r) {
    log(LogLevel::warn, fmt::format("submissions_error epoch={} error={}", epoch_.value, r.error().message));
    return;
  }
  if (r->current_epoch != epoch_) return fence("process_submissions", "", r->current_epoch);
  if (r->submissions == 0) return;
  log(LogLevel::info, fmt::format("submissions_processed submissions={} runs={} refused={} epoch={}", r->submissions,
                                  r->runs, r->refused, epoch_.value));
  if (r->runs > 0) pass_.dispatch_requested = true;
  if (r->submissions >= submission_batch) pass_.inbox_requested = true;  // more waiting: the next pass goes on
}

void RunBook::process_events() {
  const OpId op = next_op();
  awaiting_.events.emplace(op, resume::EventsProcessing{});
  emit(ProcessEvents{op, event_batch});
}

void RunBook::resumed(resume::EventsProcessing&, const Result<store::EventsProcessed>& r) {
  if (!r) {
    log(LogLevel::warn, fmt::format("events_error epoch={} error={}", epoch_.value, r.error().message));
    return;
  }
  if (r->current_epoch != epoch_) return fence("process_events", "", r->current_epoch);
  if (r->events == 0) return;
  log(LogLevel::info, fmt::format("events_processed events={} runs={} epoch={}", r->events, r->runs, epoch_.value));
  if (r->runs > 0) pass_.dispatch_requested = true;
  if (r->events >= event_batch) last_.cron = MonoTime{};  // more waiting: the next pass goes on
}

void RunBook::prune() {
  last_.prune = now_;
  const OpId op = next_op();
  awaiting_.prune.emplace(op, resume::Pruning{});
  emit(Prune{op, prune_batch});
}

void RunBook::resumed(resume::Pruning&, const Result<store::Pruned>& r) {
  if (!r) {
    log(LogLevel::warn, fmt::format("prune_error epoch={} error={}", epoch_.value, r.error().message));
    return;
  }
  if (r->current_epoch != epoch_) return fence("prune", "", r->current_epoch);
  if (r->runs + r->ledger + r->events + r->dead_letters + r->submissions + r->webhook_deliveries == 0) return;
  log(LogLevel::info,
      fmt::format("pruned runs={} ledger={} events={} dead_letters={} submissions={} webhook_deliveries={} epoch={}",
                  r->runs, r->ledger, r->events, r->dead_letters, r->submissions, r->webhook_deliveries, epoch_.value));
  // A full batch: more is waiting; go on at the next pass rather than wait.
  if (r->runs >= prune_batch || r->ledger >= prune_batch || r->events >= prune_batch ||
      r->dead_letters >= prune_batch || r->submissions >= prune_batch || r->webhook_deliveries >= prune_batch)
    last_.prune = MonoTime{};
}

}  // namespace baton::leader_core
