#include "baton/leader/control_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "baton/core/assert.h"
#include "baton/core/json_text.h"
#include "baton/leader_core/read_age.h"

namespace baton::leader {

namespace lc = leader_core;

namespace {

// The loop waits for events at most this long between passes.
constexpr Millis loop_wait_max{10};

// A statement that holds the loop thread (or a lane) this long, or a wake-up
// the loop reaches this late, is logged: everything queued behind it (a
// cron slot's start, a trigger's assignment) was that late too.
constexpr Millis loop_slow{50};

double ms_of(std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); }

/// The statement an effect runs on the loop thread (nullptr: no statement,
/// or one run on a lane, which times itself: the batched writes and the
/// periodic reads).
template <class T>
constexpr const char* statement_of() {
  if constexpr (std::is_same_v<T, lc::RecordWorker>)
    return "worker_registry";
  else if constexpr (std::is_same_v<T, lc::RecordWorkersSeen>)
    return "workers_seen";
  else if constexpr (std::is_same_v<T, lc::AppendRunLog>)
    return "append_run_log";
  else if constexpr (std::is_same_v<T, lc::ReadActive>)
    return "active_runs";
  else if constexpr (std::is_same_v<T, lc::ReadRun>)
    return "run_read";
  else if constexpr (std::is_same_v<T, lc::WriteRun>)
    return "run_write";
  else if constexpr (std::is_same_v<T, lc::WriteHeartbeats>)
    return "heartbeat_batch";
  else if constexpr (std::is_same_v<T, lc::CreateCronRun>)
    return "create_cron_run";
  else if constexpr (std::is_same_v<T, lc::Prune>)
    return "prune";
  else if constexpr (std::is_same_v<T, lc::ProcessEvents>)
    return "process_events";
  else if constexpr (std::is_same_v<T, lc::RecordDecision>)
    return "record_decision";
  else if constexpr (std::is_same_v<T, lc::SkipCronSlots>)
    return "skip_cron_slots";
  else
    return nullptr;
}

spdlog::level::level_enum level_of(lc::LogLevel l) {
  switch (l) {
    case lc::LogLevel::debug: return spdlog::level::debug;
    case lc::LogLevel::info: return spdlog::level::info;
    case lc::LogLevel::warn: return spdlog::level::warn;
    case lc::LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

std::atomic<std::int64_t>& counter(Metrics& m, lc::Counter c) {
  switch (c) {
    case lc::Counter::fenced_writes: return m.fenced_writes;
    case lc::Counter::conflict_writes: return m.conflict_writes;
    case lc::Counter::runs_assigned: return m.runs_assigned;
    case lc::Counter::runs_started: return m.runs_started;
    case lc::Counter::runs_finished: return m.runs_finished;
    case lc::Counter::runs_orphaned: return m.runs_orphaned;
    case lc::Counter::runs_requeued: return m.runs_requeued;
    case lc::Counter::runs_created_by_cron: return m.runs_created_by_cron;
    case lc::Counter::cron_slots_skipped: return m.cron_skips_recorded;
    case lc::Counter::protocol_errors: return m.protocol_errors;
  }
  return m.protocol_errors;
}

}  // namespace

ControlLoop::ControlLoop(Epoch epoch, NodeIdentity me, RuntimeConfig cfg, RunLanes runs, store::LeaderStore& store,
                         store::LeaderStore& reads, const Clock& clock, Metrics& metrics)
    : epoch_(epoch),
      me_(std::move(me)),
      cfg_(cfg),
      lanes_(runs),
      store_(store),
      reads_(reads),
      clock_(clock),
      metrics_(metrics),
      book_(epoch, me_.node_id, cfg, static_cast<std::uint64_t>(epoch.value) * 7919u + 17u, clock.mono()) {}

ControlLoop::~ControlLoop() = default;

ControlLoop::Lane::Lane()
    : thread_([this] {
        std::unique_lock lock(mutex_);
        while (true) {
          wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
          if (jobs_.empty()) return;  // stopping, nothing left
          auto job = std::move(jobs_.front());
          jobs_.pop_front();
          lock.unlock();
          job();
          lock.lock();
        }
      }) {}

ControlLoop::Lane::~Lane() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ControlLoop::Lane::post(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void ControlLoop::post(LoopEvent e) {
  {
    std::lock_guard lock(mutex_);
    if (auto* m = std::get_if<WorkerMessage>(&e)) {
      if (inbox_messages_ >= loop_inbox_max) {
        overflowed_.emplace(m->link_id, m->worker_id);
        return;
      }
      inbox_messages_++;
    }
    inbox_.push_back(std::move(e));
  }
  wake_.notify_one();
}

void ControlLoop::run(const std::atomic<bool>& stop) {
  book_.start(clock_.mono());
  drain();
  while (!stop.load() && !book_.fenced()) {
    std::deque<LoopEvent> batch;
    std::map<std::uint64_t, std::string> overflowed;
    {
      auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(loop_wait_max);
      if (auto wakeup = book_.next_wakeup()) wait = std::clamp(*wakeup - clock_.mono(), decltype(wait){0}, wait);
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, wait, [&] { return !inbox_.empty() || !overflowed_.empty(); });
      batch.swap(inbox_);
      overflowed.swap(overflowed_);
      inbox_messages_ = 0;
    }
    for (const auto& [link, worker] : overflowed) {
      spdlog::warn("loop_inbox_full worker={} limit={} epoch={}", json_quote(worker), loop_inbox_max, epoch_.value);
      book_.detached(link, worker, "leader inbox full", clock_.mono());
      drain();
      if (auto it = links_.find(link); it != links_.end()) it->second->close("leader inbox full");
    }
    batch_left_ = batch.size();
    for (const auto& e : batch) {
      if (book_.fenced() || stop.load()) break;
      --batch_left_;
      feed(e);
      drain();
    }
    batch_left_ = 0;
    // Before the pass's finishes are written (tick): a finished run's log
    // holds its output.
    flush_output();
    if (book_.fenced() || stop.load()) break;
    const MonoTime now = clock_.mono();
    if (auto wakeup = book_.next_wakeup(); wakeup && now - *wakeup >= loop_slow)
      spdlog::warn("loop_wakeup_late ms={:.1f} epoch={}", ms_of(now - *wakeup), epoch_.value);
    book_.tick(now);
    drain();
    metrics_.attached_workers = static_cast<int>(book_.attached_workers());
  }
  fenced_ = book_.fenced();
  drain();  // the log lines of the last step
  flush_output();
  for (auto& [id, link] : links_) link->close(fenced_ ? "leader fenced" : "leader stepping down");
  links_.clear();
  metrics_.attached_workers = 0;
  spdlog::info("control_loop_stop node={} epoch={} fenced={}", me_.node_id, epoch_.value, fenced_.load());
}

void ControlLoop::feed(const LoopEvent& e) {
  const MonoTime now = clock_.mono();
  std::visit(
      [&](const auto& ev) {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, WorkerAttached>) {
          links_[ev.link->id()] = ev.link;
          book_.attached(ev.link->id(), ev.hello, now);
        } else if constexpr (std::is_same_v<T, WorkerDetached>) {
          book_.detached(ev.link_id, ev.worker_id, "closed", now);
          drain();
          links_.erase(ev.link_id);
        } else if constexpr (std::is_same_v<T, WorkerMessage>) {
          book_.message(ev.link_id, ev.worker_id, ev.message, now);
        } else if constexpr (std::is_same_v<T, CancelRun>) {
          book_.cancel(ev.run, ev.reason, now);
        } else if constexpr (std::is_same_v<T, LaneDone>) {
          ev.deliver();
        } else if (ev.due.empty()) {
          book_.dispatch_now();
        } else {
          book_.created(ev.due, now);
        }
      },
      e);
}

void ControlLoop::drain() {
  while (book_.has_effects()) {
    auto effects = book_.take_effects();
    for (auto& effect : effects) {
      // Effects emitted before a Fenced answer arrived are not carried out
      // once it has: nothing more reaches a worker or the database.
      if (book_.fenced() && lc::is_external(effect)) continue;
      execute(effect);
    }
  }
  if (book_.fenced()) fenced_ = true;
}

void ControlLoop::execute(lc::Effect& effect) {
  const char* statement = std::visit([](const auto& e) { return statement_of<std::decay_t<decltype(e)>>(); }, effect);
  const MonoTime began = clock_.mono();
  carry_out(effect);
  if (statement == nullptr) return;
  if (const auto took = clock_.mono() - began; took >= loop_slow)
    spdlog::warn("loop_statement_slow statement={} ms={:.1f} epoch={}", statement, ms_of(took), epoch_.value);
}

void ControlLoop::carry_out(lc::Effect& effect) {
  std::visit(
      [&](auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, lc::Send>) {
          if (auto it = links_.find(e.link); it != links_.end()) it->second->send(e.message);
        } else if constexpr (std::is_same_v<T, lc::Close>) {
          if (auto it = links_.find(e.link); it != links_.end()) {
            it->second->close(e.reason);
            links_.erase(it);
          }
        } else if constexpr (std::is_same_v<T, lc::Log>) {
          spdlog::log(level_of(e.level), "{}", e.text);
        } else if constexpr (std::is_same_v<T, lc::Count>) {
          counter(metrics_, e.counter) += e.n;
        } else if constexpr (std::is_same_v<T, lc::ObserveRunFinished>) {
          metrics_.observe_attempt_finished(e.job, e.outcome, e.duration_ms);
        } else if constexpr (std::is_same_v<T, lc::ObserveDispatchLatency>) {
          metrics_.observe_dispatch_latency_us(e.us);
        } else if constexpr (std::is_same_v<T, lc::RecordWorker>) {
          auto r = e.attached ? store_.worker_attached(e.worker_id, e.labels_json, e.capacity, me_.node_id, epoch_)
                              : store_.worker_detached(e.worker_id);
          if (!r) spdlog::warn("worker_registry_error worker={} error={}", json_quote(e.worker_id), r.error().message);
        } else if constexpr (std::is_same_v<T, lc::RecordWorkersSeen>) {
          if (auto r = store_.workers_seen(e.worker_ids); !r)
            spdlog::warn("worker_registry_error workers={} error={}", e.worker_ids.size(), r.error().message);
        } else if constexpr (std::is_same_v<T, lc::AppendRunLog>) {
          (void)store_.append_run_log(e.run, e.attempt, e.stream, e.chunk);  // best effort: the tail is in the finish
        } else if constexpr (std::is_same_v<T, lc::AppendRunOutput>) {
          output_.push_back(std::move(e.chunk));
        } else if constexpr (std::is_same_v<T, lc::ReadActive>) {
          book_.result(e.op, store_.active_runs(e.continuation_margin), clock_.mono());
        } else if constexpr (std::is_same_v<T, lc::ReadRun>) {
          book_.result(e.op, lanes_.main.read_run(e.run), clock_.mono());
        } else if constexpr (std::is_same_v<T, lc::ReadDue>) {
          // The periodic reads on the read lane: on the loop thread, a slow
          // due read (179.6 ms once in a benchmark's cron phase) held
          // everything behind it, a cron slot's starts included.
          read_on_lane<std::vector<store::DueRun>>(
              e.op, "due_runs", [this, limit = e.limit, labels = std::move(e.labels), ahead = e.ahead] {
                return reads_.due_runs(limit, labels, ahead);
              });
        } else if constexpr (std::is_same_v<T, lc::ReadScheduledJobs>) {
          read_on_lane<std::vector<store::ScheduledJob>>(e.op, "scheduled_jobs",
                                                         [this] { return reads_.scheduled_jobs(); });
        } else if constexpr (std::is_same_v<T, lc::ReadControls>) {
          read_on_lane<store::Controls>(e.op, "read_controls", [this] { return reads_.read_controls(); });
        } else if constexpr (std::is_same_v<T, lc::WriteRun>) {
          write_run(e);
        } else if constexpr (std::is_same_v<T, lc::WriteAssigns>) {
          // With nothing waiting to be taken in (a trigger at idle), here:
          // the lane's two thread hand-overs would only add ~0.1 ms to the
          // trigger's start. Otherwise on the assign lane, so the loop takes
          // starts and finishes in (and hands them to their lanes) while it
          // is written; the book's pass waits for the result either way.
          // (The row count is read before the rows move into the write.)
          const std::size_t n = e.rows.size();
          write_batch(inputs_waiting() ? &assign_lane_ : nullptr, e.op, "assign_batch", n,
                      [this, rows = std::move(e.rows)] { return lanes_.assigns.assign_batch(epoch_, rows); });
        } else if constexpr (std::is_same_v<T, lc::WriteFinishes>) {
          const std::size_t n = e.rows.size();
          write_batch(&finish_lane_, e.op, "finish_batch", n,
                      [this, rows = std::move(e.rows)] { return lanes_.finishes.finish_batch(epoch_, rows); });
        } else if constexpr (std::is_same_v<T, lc::WriteStarts>) {
          const std::size_t n = e.rows.size();
          write_batch(&start_lane_, e.op, "start_batch", n,
                      [this, rows = std::move(e.rows), stale_after = e.stale_after] {
                        return lanes_.starts.start_batch(epoch_, rows, stale_after);
                      });
        } else if constexpr (std::is_same_v<T, lc::WriteHeartbeats>) {
          book_.result(e.op, store_.heartbeat_batch(epoch_, e.rows, e.stale_after), clock_.mono());
        } else if constexpr (std::is_same_v<T, lc::CreateCronRun>) {
          book_.result(e.op, store_.create_cron_run(epoch_, e.job, e.slot_unix, e.caught_up, e.jitter_ms),
                       clock_.mono());
        } else if constexpr (std::is_same_v<T, lc::Prune>) {
          book_.result(e.op, store_.prune(epoch_, e.batch), clock_.mono());
        } else if constexpr (std::is_same_v<T, lc::ProcessEvents>) {
          book_.result(e.op, store_.process_events(epoch_, e.limit), clock_.mono());
        } else if constexpr (std::is_same_v<T, lc::ReadWaiting>) {
          read_on_lane<std::vector<store::DueRun>>(e.op, "waiting_runs",
                                                   [this, limit = e.limit] { return reads_.waiting_runs(limit); });
        } else if constexpr (std::is_same_v<T, lc::ReadUnmatched>) {
          read_on_lane<std::vector<store::DueRun>>(
              e.op, "unmatched_runs",
              [this, sets = std::move(e.label_sets), limit = e.limit] { return reads_.unmatched_runs(sets, limit); });
        } else if constexpr (std::is_same_v<T, lc::RecordDecision>) {
          book_.result(e.op, store_.record_decision(epoch_, e.run, e.decision, e.reason, "{}"), clock_.mono());
        } else if constexpr (std::is_same_v<T, lc::SkipCronSlots>) {
          book_.result(e.op, store_.skip_cron_slots(epoch_, e.job, e.ranges, e.details_json), clock_.mono());
        }
      },
      effect);
}

void ControlLoop::write_batch(Lane* lane, lc::OpId op, const char* statement, std::size_t rows,
                              std::function<Result<store::BatchWriteResult>()> write) {
  auto timed = [this, statement, rows, write = std::move(write)] {
    const MonoTime began = clock_.mono();
    auto r = write();
    lane_took(statement, rows, clock_.mono() - began);
    return r;
  };
  if (lane == nullptr) return book_.result(op, timed(), clock_.mono());
  // The result comes back through the inbox, like every input.
  lane->post([this, op, timed = std::move(timed)] {
    post(LaneDone{[this, op, r = timed()] { book_.result(op, r, clock_.mono()); }});
  });
}

template <class R>
void ControlLoop::read_on_lane(lc::OpId op, const char* statement, std::function<Result<R>()> read) {
  read_lane_.post([this, op, statement, read = std::move(read)] {
    const MonoTime began = clock_.mono();
    Result<R> r = read();
    const MonoTime returned = clock_.mono();
    std::size_t rows = 1;
    if constexpr (requires { r->size(); }) rows = r ? r->size() : 0;
    lane_took(statement, rows, returned - began);
    post(LaneDone{[this, op, returned, r = std::move(r)]() mutable {
      const MonoTime now = clock_.mono();
      // The time it waited in the inbox: a hold or a wake-up the read
      // counts from its own moment moves by it (leader_core/read_age.h).
      if constexpr (requires { lc::age_read(*r, Millis{}); })
        if (r) lc::age_read(*r, std::chrono::floor<Millis>(now - returned));
      book_.result(op, r, now);
    }});
  });
}

bool ControlLoop::inputs_waiting() {
  if (batch_left_ > 0) return true;
  std::lock_guard lock(mutex_);
  return !inbox_.empty() || !overflowed_.empty();
}

void ControlLoop::lane_took(const char* statement, std::size_t rows, std::chrono::nanoseconds took) const {
  if (took >= loop_slow)
    spdlog::warn("lane_statement_slow statement={} rows={} ms={:.1f} epoch={}", statement, rows, ms_of(took),
                 epoch_.value);
}

void ControlLoop::flush_output() {
  if (output_.empty()) return;
  if (archive_) archive_->push(output_);  // its own thread: a slow disk never stalls this loop
  const MonoTime began = clock_.mono();
  if (auto r = store_.append_run_output(output_, cfg_.output_db_bytes); !r)
    spdlog::warn("run_output_not_logged chunks={} error={} epoch={}", output_.size(), json_quote(r.error().message),
                 epoch_.value);
  if (const auto took = clock_.mono() - began; took >= loop_slow)
    spdlog::warn("loop_statement_slow statement=append_run_output ms={:.1f} epoch={}", ms_of(took), epoch_.value);
  output_.clear();
}

void ControlLoop::write_run(const lc::WriteRun& w) {
  store::RunStore& runs = lanes_.main;
  Result<store::WriteResult> r = [&]() -> Result<store::WriteResult> {
    switch (w.kind) {
      case lc::RunWriteKind::adopt: return runs.adopt(w.fence, w.attempt);
      case lc::RunWriteKind::orphan: return runs.orphan(w.fence);
      case lc::RunWriteKind::requeue: return runs.requeue(w.fence);
      case lc::RunWriteKind::begin_confirming: return runs.begin_confirming(w.fence, w.delay);
      case lc::RunWriteKind::finish: return runs.finish(w.fence, w.attempt, w.finish);
      case lc::RunWriteKind::retry_later: return runs.retry_later(w.fence, w.attempt, w.finish, w.delay);
      case lc::RunWriteKind::cancel: return runs.cancel(w.fence, w.from, w.reason);
      case lc::RunWriteKind::request_cancel: return runs.request_cancel(w.fence, w.reason);
      case lc::RunWriteKind::fail_unrunnable: return runs.fail_unrunnable(w.fence, w.from, w.error_code, w.reason);
      case lc::RunWriteKind::late_success: return runs.late_success(w.fence, w.attempt, w.finish);
    }
    BATON_ASSERT(false);
    return runs.orphan(w.fence);
  }();
  book_.result(w.op, r, clock_.mono());
}

}  // namespace baton::leader
