#include "baton/store_calls/store_call.h"

#include <type_traits>
#include <utility>
#include <variant>

#include "baton/base/assert.h"
#include "baton/base/json_text.h"
#include "baton/leader_core/read_age.h"

namespace baton::store_calls {
namespace lc = leader_core;
namespace {

/// A result the book waits for, under `op`.
template <class T>
Returned returned(lc::OpId op, Result<T> r) {
  std::size_t rows = 1;
  if constexpr (requires { r->size(); }) rows = r ? r->size() : 0;
  return Returned{[op, r = std::move(r)](lc::RunBook& book, MonoTime now, Millis waited) mutable {
                    if constexpr (requires { lc::age_read(*r, Millis{}); })
                      if (r && waited > Millis{0}) lc::age_read(*r, waited);
                    book.result(op, r, now);
                  },
                  rows,
                  {}};
}

/// A best-effort call: nothing to feed back, a failure to log.
Returned best_effort(const Result<void>& r, std::string what) {
  if (r) return {};
  return Returned{{}, 0, std::move(what) + " error=" + r.error().message};
}

Result<store::WriteResult> write_run(store::RunStore& runs, const lc::WriteRun& w) {
  switch (w.kind) {
    case lc::RunWriteKind::adopt: return runs.adopt(w.fence, w.attempt);
    case lc::RunWriteKind::orphan: return runs.orphan(w.fence);
    case lc::RunWriteKind::requeue: return runs.requeue(w.fence);
    case lc::RunWriteKind::begin_confirming: return runs.begin_confirming(w.fence, w.delay);
    case lc::RunWriteKind::finish: return runs.finish(w.fence, w.attempt, w.finish);
    case lc::RunWriteKind::retry_later: return runs.retry_later(w.fence, w.attempt, w.finish, w.delay);
    case lc::RunWriteKind::cancel: return runs.cancel(w.fence, w.from, w.reason);
    case lc::RunWriteKind::cancel_attempt: return runs.cancel_attempt(w.fence, w.attempt, w.finish, w.reason);
    case lc::RunWriteKind::request_cancel: return runs.request_cancel(w.fence, w.reason);
    case lc::RunWriteKind::fail_unrunnable: return runs.fail_unrunnable(w.fence, w.from, w.error_code, w.reason);
    case lc::RunWriteKind::late_success: return runs.late_success(w.fence, w.attempt, w.finish);
    case lc::RunWriteKind::record_late_report: return runs.record_late_report(w.fence, w.attempt, w.finish);
  }
  BATON_ASSERT(false);
  return runs.orphan(w.fence);
}

}  // namespace

std::optional<Call> call_of(lc::Effect& effect, const Stores& stores, Epoch epoch, const std::string& node_id) {
  return std::visit(
      [&](auto& e) -> std::optional<Call> {
        using T = std::decay_t<decltype(e)>;
        store::RunStore* main = &stores.main;
        store::LeaderStore* leader = &stores.leader;
        store::LeaderStore* reads = &stores.reads;
        if constexpr (std::is_same_v<T, lc::RecordWorker>) {
          return Call{"worker_registry", Lane::loop, 1, [leader, e = std::move(e), epoch, node_id] {
                        auto r = e.attached
                                     ? leader->worker_attached(e.worker_id, e.labels_json, e.capacity, node_id, epoch)
                                     : leader->worker_detached(e.worker_id, node_id, epoch);
                        return best_effort(r, "worker_registry_error worker=" + json_quote(e.worker_id));
                      }};
        } else if constexpr (std::is_same_v<T, lc::RecordWorkersSeen>) {
          return Call{"workers_seen", Lane::loop, e.worker_ids.size(), [leader, ids = std::move(e.worker_ids)] {
                        return best_effort(leader->workers_seen(ids),
                                           "worker_registry_error workers=" + std::to_string(ids.size()));
                      }};
        } else if constexpr (std::is_same_v<T, lc::AppendRunLog>) {
          // Best effort and not logged: the tail is in the finish.
          return Call{"append_run_log", Lane::loop, 1, [leader, e = std::move(e)] {
                        (void)leader->append_run_log(e.run, e.attempt, e.stream, e.chunk);
                        return Returned{};
                      }};
        } else if constexpr (std::is_same_v<T, lc::ReadActive>) {
          // On the loop's thread, never a lane: its rows replace the book's
          // view of the active runs, so it must reach the book before the
          // result of any lane write that committed after its snapshot.
          return Call{"active_runs", Lane::loop, 0,
                      [leader, e] { return returned(e.op, leader->active_runs(e.continuation_margin)); }};
        } else if constexpr (std::is_same_v<T, lc::ReadRun>) {
          return Call{"run_read", Lane::loop, 0, [main, e] { return returned(e.op, main->read_run(e.run)); }};
        } else if constexpr (std::is_same_v<T, lc::ReadDue>) {
          return Call{"due_runs", Lane::reads, 0, [reads, e = std::move(e)] {
                        return returned(e.op, reads->due_runs(e.limit, e.labels, e.ahead, e.taking));
                      }};
        } else if constexpr (std::is_same_v<T, lc::ReadScheduledJobs>) {
          return Call{"scheduled_jobs", Lane::reads, 0, [reads, e] { return returned(e.op, reads->scheduled_jobs()); }};
        } else if constexpr (std::is_same_v<T, lc::ReadControls>) {
          return Call{"read_controls", Lane::reads, 0, [reads, e] { return returned(e.op, reads->read_controls()); }};
        } else if constexpr (std::is_same_v<T, lc::ReadWaiting>) {
          if (e.for_keys)
            return Call{"key_waiting_runs", Lane::reads, 0,
                        [reads, e] { return returned(e.op, reads->key_waiting_runs(e.limit)); }};
          return Call{"waiting_runs", Lane::reads, 0,
                      [reads, e] { return returned(e.op, reads->waiting_runs(e.limit)); }};
        } else if constexpr (std::is_same_v<T, lc::ReadUnmatched>) {
          return Call{"unmatched_runs", Lane::reads, 0, [reads, e = std::move(e)] {
                        return returned(e.op, reads->unmatched_runs(e.label_sets, e.limit));
                      }};
        } else if constexpr (std::is_same_v<T, lc::WriteRun>) {
          return Call{"run_write", Lane::loop, 1,
                      [main, e = std::move(e)] { return returned(e.op, write_run(*main, e)); }};
        } else if constexpr (std::is_same_v<T, lc::WriteAssigns>) {
          const std::size_t n = e.rows.size();
          return Call{"assign_batch", Lane::assigns, n, [runs = &stores.assigns, epoch, e = std::move(e)] {
                        return returned(e.op, runs->assign_batch(epoch, e.rows));
                      }};
        } else if constexpr (std::is_same_v<T, lc::WriteStarts>) {
          const std::size_t n = e.rows.size();
          return Call{"start_batch", Lane::starts, n, [runs = &stores.starts, epoch, e = std::move(e)] {
                        return returned(e.op, runs->start_batch(epoch, e.rows, e.stale_after));
                      }};
        } else if constexpr (std::is_same_v<T, lc::WriteFinishes>) {
          const std::size_t n = e.rows.size();
          return Call{"finish_batch", Lane::finishes, n, [runs = &stores.finishes, epoch, e = std::move(e)] {
                        return returned(e.op, runs->finish_batch(epoch, e.rows));
                      }};
        } else if constexpr (std::is_same_v<T, lc::WriteHeartbeats>) {
          const std::size_t n = e.rows.size();
          return Call{"heartbeat_batch", Lane::loop, n, [leader, epoch, e = std::move(e)] {
                        return returned(e.op, leader->heartbeat_batch(epoch, e.rows, e.stale_after));
                      }};
        } else if constexpr (std::is_same_v<T, lc::CreateCronRun>) {
          return Call{"create_cron_run", Lane::loop, 1, [leader, epoch, e = std::move(e)] {
                        return returned(e.op,
                                        leader->create_cron_run(epoch, e.job, e.slot_unix, e.caught_up, e.jitter_ms));
                      }};
        } else if constexpr (std::is_same_v<T, lc::SkipCronSlots>) {
          return Call{"skip_cron_slots", Lane::loop, e.ranges.size(), [leader, epoch, e = std::move(e)] {
                        return returned(e.op, leader->skip_cron_slots(epoch, e.job, e.ranges, e.details_json));
                      }};
        } else if constexpr (std::is_same_v<T, lc::RecordDecision>) {
          return Call{"record_decision", Lane::loop, 1, [leader, epoch, e = std::move(e)] {
                        return returned(e.op,
                                        leader->record_decision(epoch, e.run, e.decision, e.reason, e.details_json));
                      }};
        } else if constexpr (std::is_same_v<T, lc::Prune>) {
          return Call{"prune", Lane::loop, 0,
                      [leader, epoch, e] { return returned(e.op, leader->prune(epoch, e.batch)); }};
        } else if constexpr (std::is_same_v<T, lc::ProcessSubmissions>) {
          return Call{"process_submissions", Lane::loop, 0, [leader, epoch, e] {
                        return returned(e.op, leader->process_submissions(epoch, e.limit, e.payload_denylist));
                      }};
        } else if constexpr (std::is_same_v<T, lc::ProcessEvents>) {
          return Call{"process_events", Lane::loop, 0,
                      [leader, epoch, e] { return returned(e.op, leader->process_events(epoch, e.limit)); }};
        } else {
          // Send, Close, Log, Count, the observations, AppendRunOutput: the
          // shell's own.
          (void)main;
          (void)leader;
          (void)reads;
          return std::nullopt;
        }
      },
      effect);
}

}  // namespace baton::store_calls
