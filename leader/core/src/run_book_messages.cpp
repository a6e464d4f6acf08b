// RunBook: what a worker says (start, heartbeat, finish, output) and how
// each is judged against the book.
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

namespace {

// What a worker's reported outcome makes of its attempt. The two callers
// differ in one thing, on purpose: a CANCELED that stands (a late report
// records what happened) stays CANCELED, while a current attempt's CANCELED
// this leader did not ask for is a failure that may be retried.
enum class Cancel { stands, counts_as_failure };
RunState attempt_end_state(protocol::Outcome o, Cancel cancel) {
  switch (o) {
    case protocol::Outcome::succeeded: return RunState::succeeded;
    case protocol::Outcome::timed_out: return RunState::timed_out;
    case protocol::Outcome::canceled: return cancel == Cancel::stands ? RunState::canceled : RunState::failed;
    case protocol::Outcome::failed: return RunState::failed;
  }
  return RunState::failed;
}

}  // namespace

// --- messages ---------------------------------------------------------------

void RunBook::message(LinkId link, const std::string& worker, const protocol::Message& m, MonoTime now) {
  if (journal_) journal_->message(link, worker, m, now);
  now_ = now;
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.link != link) return after_input();  // from a replaced connection
  it->second.last_seen = now_;
  std::visit(
      [&](const auto& msg) {
        using T = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<T, protocol::Start>)
          on_start(worker, msg, false);
        else if constexpr (std::is_same_v<T, protocol::Heartbeat>)
          on_heartbeat(worker, msg);
        else if constexpr (std::is_same_v<T, protocol::Finish>)
          on_finish(worker, msg, false);
        else if constexpr (std::is_same_v<T, protocol::Drain>)
          it->second.draining = true;
        else if constexpr (std::is_same_v<T, protocol::Output>)
          on_output(worker, msg);
        else {
          count(Counter::protocol_errors);
          send_link(link, protocol::Error{"protocol", std::string("unexpected message '") + protocol::type_name(m) +
                                                          "' from a worker"});
        }
      },
      m);
  after_input();
}

void RunBook::on_start(const std::string& worker, const protocol::Start& m, bool read_done) {
  auto it = tracked_.find(m.ref.run_id);
  if (it == tracked_.end() && !read_done) return with_fresh_view(resume::StartAfterRead{worker, m});
  if (it == tracked_.end()) return deny_start(worker, m.ref, "run is not assigned");
  const store::ActiveRun& r = it->second.row;
  if (held_by(r, RunState::running, worker, m.ref)) return regrant_start(it->second, worker, m.ref);
  if (!held_by(r, RunState::assigned, worker, m.ref))
    return deny_start(worker, m.ref, "not the current assignment of this run");
  // "No start right, no process": the grant is sent only after the batched
  // start write (flush_starts) has applied.
  // A repeated start already queued, held for its time or being written.
  if (lanes_.start.holds(r.id.value) || lanes_.early_starts.count(r.id.value)) return;
  auto w = workers_.find(worker);
  store::StartRow row{
      r.id, r.version, {worker, r.attempt, r.lease_token}, w != workers_.end() ? w->second.instance : ""};
  // Assigned ahead of its time: the start waits for it (flush_starts), and
  // the book wakes then.
  if (const auto& not_before = it->second.start_not_before; not_before && now_ < *not_before) {
    lanes_.early_starts.emplace(r.id.value, std::make_pair(*not_before, std::move(row)));
    wakeups_.insert(*not_before);
    return;
  }
  (void)lanes_.start.queue(r.id.value, std::move(row));
}

void RunBook::viewed(resume::StartAfterRead& s, bool) { on_start(s.worker, s.start, true); }

void RunBook::regrant_start(Tracked& t, const std::string& worker, const protocol::AttemptRef& ref) {
  // The start was written but its grant never reached the worker (the
  // connection, or the leader that sent it, died): the database already holds
  // this attempt's start right, so grant it again. Denying it left the run
  // RUNNING with no worker running it.
  log(LogLevel::info, fmt::format("start_regranted run={} attempt={} worker={} epoch={}", ref.run_id, ref.attempt,
                                  json_quote(worker), epoch_.value));
  mark_listed(t);
  send(worker, protocol::StartGranted{ref});
}

void RunBook::deny_start(const std::string& worker, const protocol::AttemptRef& ref, const std::string& why) {
  log(LogLevel::info, fmt::format("start_denied run={} attempt={} worker={} epoch={} reason={}", ref.run_id,
                                  ref.attempt, json_quote(worker), epoch_.value, why));
  send(worker, protocol::StartDenied{ref, why});
}

void RunBook::on_heartbeat(const std::string& worker, const protocol::Heartbeat& m) {
  auto w = workers_.find(worker);
  if (w == workers_.end()) return;
  // A worker holds at most its capacity running plus as many ended or
  // assigned: a frame listing far more is refused whole, so no frame can
  // make the leader chase thousands of refs it never handed out.
  const std::size_t refs = m.running.size() + m.finished.size() + m.assigned.size() + m.progress.size();
  const std::size_t cap = 4 * static_cast<std::size_t>(std::max(1, w->second.capacity)) + 64;
  if (refs > cap) {
    count(Counter::protocol_errors);
    log(LogLevel::warn, fmt::format("heartbeat_refused worker={} refs={} limit={} epoch={}", json_quote(worker), refs,
                                    cap, epoch_.value));
    send_link(w->second.link,
              protocol::Error{"protocol", "heartbeat lists " + std::to_string(refs) +
                                              " attempts; a worker of capacity " + std::to_string(w->second.capacity) +
                                              " may list at most " + std::to_string(cap)});
    return;
  }
  w->second.heartbeats++;
  // Everything the worker holds -- running, ended with its finish not yet
  // acknowledged, assigned and not started -- counts as listed: only an
  // attempt in none of the lists is one the worker does not have.
  auto listed = [&](const protocol::AttemptRef& ref) {
    auto it = tracked_.find(ref.run_id);
    if (it != tracked_.end() && it->second.row.worker_id == worker && it->second.row.attempt == ref.attempt &&
        it->second.row.lease_token == ref.lease_token) {
      mark_listed(it->second);
      note_holder(it->second);
    }
  };
  for (const auto& ref : m.finished) {
    listed(ref);
    adopt_ended(worker, ref);
  }
  for (const auto& ref : m.assigned) listed(ref);
  // Progress of the attempts this worker runs for this leader's book; any
  // other is dropped (a replaced attempt's, another worker's).
  for (const auto& p : m.progress)
    if (auto it = tracked_.find(p.ref.run_id);
        it != tracked_.end() && held_by(it->second.row, RunState::running, worker, p.ref))
      it->second.progress_unwritten = p.text;
  // Unknown running refs are judged on a fresh read, never on a failed one
  // (a failed read proves nothing: no cancel then).
  const bool unknown = std::any_of(m.running.begin(), m.running.end(),
                                   [&](const protocol::AttemptRef& ref) { return !tracked_.count(ref.run_id); });
  if (!unknown) return judge_running(worker, m.running, true);
  with_fresh_view(resume::RunningAfterRead{worker, m.running});
}

void RunBook::viewed(resume::RunningAfterRead& s, bool fresh) { judge_running(s.worker, s.running, fresh); }

void RunBook::judge_running(const std::string& worker, const std::vector<protocol::AttemptRef>& running, bool fresh) {
  for (const auto& ref : running) {
    auto it = tracked_.find(ref.run_id);
    const bool current = it != tracked_.end() && held_by(it->second.row, RunState::running, worker, ref);
    if (!current) {
      if (it == tracked_.end() && !fresh) continue;
      log(LogLevel::info, fmt::format("stale_attempt_cancel run={} attempt={} worker={} epoch={}", ref.run_id,
                                      ref.attempt, json_quote(worker), epoch_.value));
      send(worker, protocol::Cancel{ref, "attempt is no longer current"});
      continue;
    }
    mark_listed(it->second);
    note_holder(it->second);
    adopt_if_needed(ref.run_id, resume::HeartbeatAfterAdopt{ref.run_id});
  }
}

void RunBook::adopted(resume::HeartbeatAfterAdopt& s, bool adopted) {
  if (adopted) heartbeat_due_.insert(s.run);
}

void RunBook::on_finish(const std::string& worker, const protocol::Finish& m, bool read_done) {
  auto it = tracked_.find(m.ref.run_id);
  const bool current = it != tracked_.end() && held_by(it->second.row, RunState::running, worker, m.ref);
  if (!current && !read_done) {
    // This book's copy may be stale (another epoch's writes, a lost race):
    // decide on a fresh read of every active run, never on a failed one (no
    // ack then: the worker keeps the finish in its outbox and sends it again).
    return with_fresh_view(resume::FinishAfterRead{worker, m});
  }
  if (current) return finish_current(worker, m);
  if (m.outcome == protocol::Outcome::succeeded) return late_success(worker, m);
  // A replay, or an attempt that was superseded: its report is recorded if
  // a leader had given up on it.
  record_late_report(worker, m);
}

void RunBook::viewed(resume::FinishAfterRead& s, bool fresh) {
  if (fresh) on_finish(s.worker, s.finish, true);
}

void RunBook::finish_current(const std::string& worker, const protocol::Finish& m) {
  // A resend of a finish already queued or being written: its result answers it.
  if (lanes_.finish.holds(m.ref.run_id)) return;
  adopt_if_needed(m.ref.run_id, resume::FinishAfterAdopt{worker, m});
}

void RunBook::adopted(resume::FinishAfterAdopt& s, bool adopted) {
  if (!adopted) return;  // no ack: the worker sends it again
  const std::string& worker = s.worker;
  const protocol::Finish& m = s.finish;
  auto it = tracked_.find(m.ref.run_id);
  if (it == tracked_.end() || !held_by(it->second.row, RunState::running, worker, m.ref)) return;
  if (lanes_.finish.holds(m.ref.run_id)) return;
  const store::ActiveRun& r = it->second.row;
  log_tails(r, m);

  store::AttemptFence att{worker, r.attempt, r.lease_token};
  const auto requested = cancel_requested_.find(r.id.value);
  if (m.outcome != protocol::Outcome::succeeded && requested != cancel_requested_.end()) {
    // The attempt's end, under its predicates, with what the worker
    // reported of it (its attempt row shows CANCELED and its exit code).
    WriteRun w;
    w.kind = RunWriteKind::cancel_attempt;
    w.fence = {r.id, r.version, epoch_};
    w.attempt = att;
    w.finish.exit_code = m.exit_code;
    w.finish.result_json = result_json(m, log_ref_of(m));
    w.reason = requested->second;
    return write(std::move(w), resume::CanceledFinishWrite{worker, m, r.job_name});
  }
  // A CANCELED this leader did not ask for (an older leader's cancel from
  // a stale view, a cancel whose write then failed) is a failed attempt
  // that may be retried, never a final CANCELED.
  store::FinishRow row{r.id, r.version, att, {}, std::nullopt};
  row.finish.exit_code = m.exit_code;
  row.finish.error_msg = m.error;
  row.finish.result_json = result_json(m, log_ref_of(m));
  if (requested != cancel_requested_.end()) cancel_requested_.erase(requested);
  const RunState outcome = attempt_end_state(m.outcome, Cancel::counts_as_failure);
  row.finish.final_state = outcome;
  row.finish.error_code = outcome == RunState::succeeded ? "" : (outcome == RunState::timed_out ? "timeout" : "failed");
  auto decision =
      decide_finish(outcome, r.attempt, r.max_attempts, Millis{r.retry_base_ms}, Millis{r.retry_cap_ms}, jitter());
  if (decision.next == RunState::retry_waiting) row.retry_delay = decision.retry_delay;
  (void)lanes_.finish.queue(r.id.value, std::move(row), QueuedFinish{worker, m, r.job_name});
}

void RunBook::resumed(resume::CanceledFinishWrite& s, const Result<store::WriteResult>& res) {
  const protocol::Finish& m = s.finish;
  if (!note("finish", m.ref.run_id, res)) return;
  finished(s.job, "CANCELED", m.duration_ms);
  log(LogLevel::info,
      fmt::format("run_finished run={} attempt={} worker={} outcome={} state=CANCELED epoch={}", m.ref.run_id,
                  m.ref.attempt, json_quote(s.worker), protocol::to_string(m.outcome), epoch_.value));
  cancel_requested_.erase(m.ref.run_id);
  tracked_.erase(m.ref.run_id);
  send(s.worker, protocol::FinishAck{m.ref});
}

void RunBook::on_output(const std::string& worker, const protocol::Output& m) {
  // Only the worker running this attempt speaks for its output: a replaced
  // attempt's, a stale connection's or another worker's frames are dropped
  // (no read for them: output is not worth a database round trip).
  auto it = tracked_.find(m.ref.run_id);
  if (it == tracked_.end() || !held_by(it->second.row, RunState::running, worker, m.ref)) return;
  emit(AppendRunOutput{{RunId{m.ref.run_id}, m.ref.attempt, m.stream, m.offset, m.data}});
}

void RunBook::log_tails(const store::ActiveRun& r, const protocol::Finish& m) {
  auto place = [&](const char* stream, const std::string& tail, const std::optional<std::int64_t>& length) {
    if (tail.empty()) return;
    if (!length) return emit(AppendRunLog{r.id, r.attempt, stream, tail});
    // The tail is the stream's last bytes: whatever streamed frames did not
    // arrive (a leader died in between) is filled in from it.
    const std::int64_t offset = std::max<std::int64_t>(0, *length - static_cast<std::int64_t>(tail.size()));
    emit(AppendRunOutput{{r.id, r.attempt, stream, offset, tail}});
  };
  place("stdout", m.stdout_tail, m.stdout_bytes);
  place("stderr", m.stderr_tail, m.stderr_bytes);
}

std::string RunBook::log_ref_of(const protocol::Finish& m) const {
  if (!cfg_.log_archive || !m.stdout_bytes) return "";
  return output_archive_ref(m.ref.run_id);
}

void RunBook::late_success(const std::string& worker, const protocol::Finish& m) {
  read_run(RunId{m.ref.run_id}, resume::LateSuccessRead{worker, m});
}

void RunBook::resumed(resume::LateSuccessRead& s, const Result<std::optional<store::RunRow>>& row) {
  if (!row) return;  // unknown: no ack, the worker sends it again
  const std::string& worker = s.worker;
  const protocol::Finish& m = s.finish;
  const bool waiting_on_it = *row && (*row)->state == RunState::retry_waiting && (*row)->attempt == m.ref.attempt &&
                             (*row)->assigned_worker_id == worker && (*row)->lease_token == m.ref.lease_token;
  if (!waiting_on_it) return record_late_report(worker, m);  // a replay, or superseded
  // The attempt was ended as lost, yet it succeeded, and nothing has run
  // since: keep the success rather than run the work again.
  const store::RunRow& r = **row;
  WriteRun w;
  w.kind = RunWriteKind::late_success;
  w.fence = {r.id, r.version, epoch_};
  w.attempt = {worker, r.attempt, *r.lease_token};
  w.finish.exit_code = m.exit_code;
  w.finish.result_json = result_json(m, log_ref_of(m));
  write(std::move(w), resume::LateSuccessWrite{worker, m, r.job_name});
}

void RunBook::resumed(resume::LateSuccessWrite& s, const Result<store::WriteResult>& res) {
  const protocol::Finish& m = s.finish;
  if (!note("late_success", m.ref.run_id, res)) return;
  finished(s.job, "SUCCEEDED", m.duration_ms);
  log(LogLevel::info,
      fmt::format("run_finished run={} attempt={} worker={} outcome=SUCCEEDED state=SUCCEEDED late=true epoch={}",
                  m.ref.run_id, m.ref.attempt, json_quote(s.worker), epoch_.value));
  send(s.worker, protocol::FinishAck{m.ref});
}

void RunBook::record_late_report(const std::string& worker, const protocol::Finish& m) {
  // The attempt is no longer the run's to end: a replay of a finish already
  // written, or the report of an attempt superseded since. If a leader had
  // given up on it (declared it lost, or timed it out), what it reports is
  // what really happened, and is kept (schemas/0041): "succeeded after it
  // was declared lost". The run is not changed; the database decides
  // whether there is anything to record, and the ack waits for its answer
  // (without one the worker sends the finish again).
  WriteRun w;
  w.kind = RunWriteKind::record_late_report;
  w.fence = {RunId{m.ref.run_id}, Version{0}, epoch_};
  w.attempt = {worker, m.ref.attempt, m.ref.lease_token};
  w.finish.final_state = attempt_end_state(m.outcome, Cancel::stands);
  w.finish.exit_code = m.exit_code;
  write(std::move(w), resume::LateReportWrite{worker, m});
}

void RunBook::resumed(resume::LateReportWrite& s, const Result<store::WriteResult>& res) {
  const protocol::Finish& m = s.finish;
  if (!res) {
    log(LogLevel::warn, fmt::format("late_report_error run={} attempt={} worker={} epoch={} error={}", m.ref.run_id,
                                    m.ref.attempt, json_quote(s.worker), epoch_.value, res.error().message));
    return;  // no ack: the worker sends it again
  }
  if (res->outcome == WriteOutcome::fenced) {
    fence("late_report", "run=" + std::to_string(m.ref.run_id), res->current_epoch, {RunId{m.ref.run_id}});
    return;
  }
  if (res->outcome == WriteOutcome::applied)
    log(LogLevel::warn, fmt::format("late_report_recorded run={} attempt={} worker={} outcome={} exit_code={} epoch={}",
                                    m.ref.run_id, m.ref.attempt, json_quote(s.worker), protocol::to_string(m.outcome),
                                    m.exit_code ? std::to_string(*m.exit_code) : "none", epoch_.value));
  else
    log(LogLevel::info, fmt::format("finish_ack_without_write run={} attempt={} worker={} epoch={}", m.ref.run_id,
                                    m.ref.attempt, json_quote(s.worker), epoch_.value));
  send(s.worker, protocol::FinishAck{m.ref});
}

}  // namespace baton::leader_core
