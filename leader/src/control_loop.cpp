#include "baton/leader/control_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "baton/base/assert.h"
#include "baton/base/json_text.h"

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

spdlog::level::level_enum level_of(lc::LogLevel l) {
  switch (l) {
    case lc::LogLevel::debug: return spdlog::level::debug;
    case lc::LogLevel::info: return spdlog::level::info;
    case lc::LogLevel::warn: return spdlog::level::warn;
    case lc::LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

std::atomic<std::int64_t>& counter(service::NodeMetrics& m, lc::Counter c) {
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
                         store::LeaderStore& reads, const Clock& clock, service::NodeMetrics& metrics)
    : epoch_(epoch),
      me_(std::move(me)),
      cfg_(cfg),
      lanes_(runs),
      store_(store),
      reads_(reads),
      stores_{runs.main, runs.assigns, runs.starts, runs.finishes, store, reads},
      clock_(clock),
      metrics_(metrics),
      made_{epoch, me_.node_id, cfg, static_cast<std::uint64_t>(epoch.value) * 7919u + 17u, clock.mono()},
      book_(made_.epoch, made_.node_id, made_.cfg, made_.seed, made_.started) {}

ControlLoop::~ControlLoop() = default;

void ControlLoop::post(LoopEvent e) {
  {
    std::lock_guard lock(mutex_);
    if (auto* m = std::get_if<WorkerMessage>(&e)) {
      if (inbox_messages_ >= loop_inbox_max) {
        overflowed_.emplace(m->link_id, m->worker_id);
        return;
      }
      inbox_messages_++;
      BATON_ASSERT(inbox_messages_ <= loop_inbox_max);
    }
    inbox_.push_back(std::move(e));
  }
  wake_.notify_one();
}

void ControlLoop::run(const std::atomic<bool>& stop) {
  if (journal_ring_) {
    journal_sink_ = journal_ring_->begin_book(epoch_);
    journal_ = std::make_unique<journal::BookRecorder>(
        made_,
        [] {
          return std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
              .count();
        },
        *journal_sink_);
    book_.set_journal(journal_.get());
  }
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
  // What the database refused for a newer epoch goes to the decision ledger
  // (fenced_out), written now that this node no longer leads: it changes no
  // run. After the workers' links are closed: a node cut off from the
  // database waits out its statement deadline here, and then has only its
  // log, and its workers must not wait with it.
  if (fenced_ && !book_.fenced_out().empty()) {
    if (auto r = store_.record_fenced_out(epoch_, me_.node_id, book_.fenced_out()); !r)
      spdlog::warn("fenced_out_not_recorded entries={} epoch={} error={}", book_.fenced_out().size(), epoch_.value,
                   r.error().message);
  }
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
        } else if constexpr (std::is_same_v<T, RecheckRuns>) {
          book_.recheck(ev.runs, ev.invariant, now);
        } else if constexpr (std::is_same_v<T, LaneDone>) {
          ev.deliver();
        } else if constexpr (std::is_same_v<T, InboxNoticed>) {
          book_.inbox_noticed();
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
  if (auto call = store_calls::call_of(effect, stores_, epoch_, me_.node_id)) return run_call(std::move(*call));
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
        } else if constexpr (std::is_same_v<T, lc::ObserveCronSlotDelay>) {
          metrics_.observe_cron_slot_delay_ms(e.ms);
        } else if constexpr (std::is_same_v<T, lc::AppendRunOutput>) {
          output_.push_back(std::move(e.chunk));
        } else {
          BATON_ASSERT(false && "a store effect that store_calls::call_of did not take");
        }
      },
      effect);
}

void ControlLoop::run_call(store_calls::Call call) {
  using store_calls::Lane;
  if (call.lane == Lane::loop) {
    const MonoTime began = clock_.mono();
    store_calls::Returned r = call.run();
    if (const auto took = clock_.mono() - began; took >= loop_slow)
      spdlog::warn("loop_statement_slow statement={} ms={:.1f} epoch={}", call.statement, ms_of(took), epoch_.value);
    return deliver(r, Millis{0});
  }
  // An assignment with nothing waiting to be taken in (a trigger at idle) is
  // written here: the lane's two thread hand-overs would only add ~0.1 ms
  // to the trigger's start. Otherwise on the assign lane, so the loop takes
  // starts and finishes in (and hands them to their lanes) while it is
  // written; the book's pass waits for the result either way. The periodic
  // reads go to the read lane: on the loop's thread, a slow due read (179.6
  // ms once in a benchmark's cron phase) held everything behind it, a cron
  // slot's starts included.
  StatementLane* lane = call.lane == Lane::assigns    ? (inputs_waiting() ? &assign_lane_ : nullptr)
                        : call.lane == Lane::starts   ? &start_lane_
                        : call.lane == Lane::finishes ? &finish_lane_
                                                      : &read_lane_;
  auto timed = [this, call = std::move(call)] {
    const MonoTime began = clock_.mono();
    store_calls::Returned r = call.run();
    lane_took(call.statement, call.rows > 0 ? call.rows : r.rows, clock_.mono() - began);
    return r;
  };
  if (lane == nullptr) return deliver(timed(), Millis{0});
  // The result comes back through the inbox, like every input.
  lane->post([this, timed = std::move(timed)] {
    store_calls::Returned r = timed();
    const MonoTime returned = clock_.mono();
    post(LaneDone{[this, returned, r = std::move(r)] {
      // The time it waited in the inbox: a hold or a wake-up a read counts
      // from its own moment moves by it (leader_core/read_age.h).
      deliver(r, std::chrono::floor<Millis>(clock_.mono() - returned));
    }});
  });
}

void ControlLoop::deliver(const store_calls::Returned& r, Millis waited) {
  if (!r.failure.empty()) spdlog::warn("{}", r.failure);
  if (r.deliver) r.deliver(book_, clock_.mono(), waited);
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

}  // namespace baton::leader
