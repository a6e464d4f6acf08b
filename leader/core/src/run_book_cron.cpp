// RunBook, cron: the plans and creates CronCreator decides, emitted and
// fed back (skipped ranges first, then each slot's run).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "baton/base/json_text.h"
#include "baton/leader_core/run_book.h"
#include "run_book_detail.h"

namespace baton::leader_core {

using namespace run_book_detail;

// --- cron -------------------------------------------------------------------

void RunBook::materialize_cron(const std::vector<store::ScheduledJob>& jobs) {
  for (auto& step : cron_.plan(jobs, now_)) {
    if (!step.invalid.empty()) {
      log(LogLevel::error, fmt::format("cron_invalid job={} {}", json_quote(step.job), step.invalid));
      continue;
    }
    if (step.skipped.empty()) {
      create_cron_slots(std::move(step.chain));
      continue;
    }
    // The slots given up are recorded (and the cursor moved past them)
    // before any later slot is created: if the record fails, nothing after
    // it exists yet and the next pass plans the same again.
    SkipCronSlots skip;
    skip.op = next_op();
    skip.job = step.job;
    skip.details_json = std::move(step.skipped_details_json);
    for (const auto& r : step.skipped)
      log(LogLevel::info,
          fmt::format("cron_slots_skipped job={} first={} last={} count={}{} reason={} epoch={}", json_quote(step.job),
                      r.first_unix, r.last_unix, r.count ? "" : ">=", r.count_at_least, r.reason, epoch_.value));
    skip.ranges = std::move(step.skipped);
    awaiting_.create.emplace(skip.op, resume::CronSkip{std::move(step.chain)});
    emit(std::move(skip));
  }
}

void RunBook::resumed(resume::CronSkip& s, const Result<store::CreateResult>& w) {
  if (!w) {
    log(LogLevel::warn, fmt::format("cron_skip_error job={} error={}", json_quote(s.chain.job), w.error().message));
    return;
  }
  if (w->outcome == WriteOutcome::fenced) return fence("cron_skip", "job=" + json_quote(s.chain.job), w->current_epoch);
  count(Counter::cron_slots_skipped);
  create_cron_slots(std::move(s.chain));
}

void RunBook::create_cron_slots(CronChain chain) {
  if (fencing_.fenced) return;
  const auto c =
      cron_.next(chain, now_, last_.cron, wakeups_.empty() ? std::nullopt : std::optional<MonoTime>(*wakeups_.begin()));
  if (!c) return;  // done, or kept for a later pass
  const OpId op = next_op();
  emit(CreateCronRun{op, chain.job, c->slot, c->caught_up, c->jitter_delay_ms});
  awaiting_.create.emplace(op, resume::CronSlotCreate{std::move(chain), *c});
}

void RunBook::resumed(resume::CronSlotCreate& s, const Result<store::CreateResult>& w) {
  const CronChain& chain = s.chain;
  const CronCreate& c = s.slot;
  if (!w) {
    // The rest of this job's slots wait for the next pass (in order).
    log(LogLevel::warn,
        fmt::format("cron_create_error job={} slot={} error={}", json_quote(chain.job), c.slot, w.error().message));
    return;
  }
  if (w->outcome == WriteOutcome::fenced) return fence("cron_create", "job=" + json_quote(chain.job), w->current_epoch);
  if (w->forbidden) {
    count(Counter::cron_slots_skipped);
    log(LogLevel::info,
        fmt::format("cron_slot_forbidden job={} slot={} epoch={}", json_quote(chain.job), c.slot, epoch_.value));
  }
  // concurrency_policy replace: the unfinished runs are canceled; the new
  // one waits for them (the database holds it to one active run).
  for (RunId old : w->replaced)
    on_cancel(old, "replaced by run " + std::to_string(w->run.value) + " (concurrency_policy replace)", 0);
  if (w->outcome == WriteOutcome::applied) {
    count(Counter::runs_created_by_cron);
    // How late the slot's run came into being: now against the slot's time
    // on the book's clock (its due time less its jitter).
    const auto late = (now_ - c.due_at) + Millis{c.jitter_delay_ms};
    emit(ObserveCronSlotDelay{std::max<std::int64_t>(0, std::chrono::duration_cast<Millis>(late).count())});
    if (c.due_at > now_)
      wakeups_.insert(c.due_at);
    else
      pass_.dispatch_requested = true;  // due already: the next pass dispatches it
    log(LogLevel::info, fmt::format("cron_slot_fired job={} slot={} run={} epoch={}{}", json_quote(chain.job), c.slot,
                                    w->run.value, epoch_.value, c.caught_up ? " caught_up=true" : ""));
  }
  s.chain.next++;
  create_cron_slots(std::move(s.chain));
}

void RunBook::resume_cron_backlog() {
  // Each chain goes back to the backlog if it may not go on now; one round
  // over what is there, in order.
  for (auto& chain : cron_.resume()) create_cron_slots(std::move(chain));
}

}  // namespace baton::leader_core
