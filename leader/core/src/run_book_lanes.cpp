// RunBook: starts and finishes written in batches on their lanes, and
// what each batch's result does to the book.
#include "baton/leader_core/run_book.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "baton/base/assert.h"
#include "baton/base/json_text.h"
#include "baton/leader_core/dispatch.h"
#include "baton/leader_core/output_archive_path.h"
#include "baton/protocol/codec.h"
#include "baton/protocol/vocabulary.h"
#include "run_book_detail.h"

namespace baton::leader_core {

using namespace run_book_detail;

// --- batched starts and finishes -----------------------------------------

void RunBook::flush_finishes() {
  if (fencing_.fenced) return;
  auto taken = lanes_.finish.take();
  if (!taken) return;
  const OpId op = next_op();
  emit(WriteFinishes{op, taken->rows});
  awaiting_.lanes.emplace(op, resume::FinishBatch{std::move(*taken)});
}

void RunBook::resumed(resume::FinishBatch& s, const Result<store::BatchWriteResult>& res) {
  lanes_.finish.written();
  apply_finishes(s.batch.rows, s.batch.notes, res);
  flush_finishes();  // group commit: whatever queued meanwhile, at once
}

void RunBook::flush_starts() {
  for (auto it = lanes_.early_starts.begin(); it != lanes_.early_starts.end();) {
    if (it->second.first > now_) {
      ++it;
      continue;
    }
    // A start whose worker has left meanwhile is not written: the run stays
    // ASSIGNED for the reaper, or for the worker to ask again when back.
    if (workers_.count(it->second.second.attempt.worker_id))
      (void)lanes_.start.queue(it->first, std::move(it->second.second));
    it = lanes_.early_starts.erase(it);
  }
  if (fencing_.fenced) return;
  auto taken = lanes_.start.take();
  if (!taken) return;
  const OpId op = next_op();
  // One stale_after for the batch: the largest of its workers' (nearly
  // always one cadence), so that no live run is stale early.
  Millis stale_after = start_stale_after(configured_cadence(cfg_));
  for (const auto& row : taken->rows)
    if (auto w = workers_.find(row.attempt.worker_id); w != workers_.end())
      stale_after = std::max(stale_after, start_stale_after(w->second.cadence));
  emit(WriteStarts{op, taken->rows, stale_after});
  awaiting_.lanes.emplace(op, resume::StartBatch{std::move(*taken)});
}

void RunBook::resumed(resume::StartBatch& s, const Result<store::BatchWriteResult>& res) {
  lanes_.start.written();
  apply_starts(s.batch.rows, res);
  flush_starts();  // group commit: whatever queued meanwhile, at once
}

bool RunBook::lane_busy_with(std::int64_t run) const {
  return lanes_.start.holds(run) || lanes_.early_starts.count(run) || lanes_.finish.holds(run);
}

void RunBook::apply_starts(const std::vector<store::StartRow>& rows, const Result<store::BatchWriteResult>& res) {
  if (batch_fenced("start_batch", runs_of(rows), res) || fencing_.fenced) return;
  std::vector<store::StartRow> lost;
  for (const auto& row : rows) {
    const protocol::AttemptRef ref{row.run.value, row.attempt.attempt, row.attempt.lease_token};
    const store::WriteResult* applied = nullptr;
    if (res)
      if (auto a = res->applied.find(row.run.value); a != res->applied.end()) applied = &a->second;
    auto it = tracked_.find(row.run.value);
    if (!applied || it == tracked_.end()) {
      lost.push_back(row);
      continue;
    }
    store::ActiveRun& r = it->second.row;
    r.state = RunState::running;
    r.version = applied->new_version;
    r.leader_epoch = epoch_;
    it->second.started_at = now_;
    mark_listed(it->second);
    count(Counter::runs_started);
    log(LogLevel::info, fmt::format("run_started run={} job={} attempt={} worker={} epoch={}", r.id.value,
                                    json_quote(r.job_name), r.attempt, json_quote(r.worker_id), epoch_.value));
    send(r.worker_id, protocol::StartGranted{ref});
  }
  if (lost.empty()) return;
  // Judge the rows that were not written on a fresh read: one whose start is
  // already in the database (this book's copy was stale) is granted, one
  // that is no longer this worker's assignment is denied. After a failed
  // write and a failed read the outcome is unknown: nothing is sent, and the
  // worker asks again (a denial there cost the run an attempt that never ran).
  distrust();
  with_fresh_view(resume::StartsAfterRead{std::move(lost)});
}

void RunBook::viewed(resume::StartsAfterRead& s, bool fresh) {
  if (!fresh) return;
  for (const auto& row : s.lost) {
    const protocol::AttemptRef ref{row.run.value, row.attempt.attempt, row.attempt.lease_token};
    auto it = tracked_.find(row.run.value);
    if (it != tracked_.end() && held_by(it->second.row, RunState::running, row.attempt.worker_id, ref))
      regrant_start(it->second, row.attempt.worker_id, ref);
    else if (it == tracked_.end() || !held_by(it->second.row, RunState::assigned, row.attempt.worker_id, ref))
      deny_start(row.attempt.worker_id, ref, "start lost a race");
    // Still ASSIGNED to it: the write failed, not the race; the next start it sends is written.
  }
}

void RunBook::apply_finishes(const std::vector<store::FinishRow>& rows,
                             const std::map<std::int64_t, QueuedFinish>& messages,
                             const Result<store::BatchWriteResult>& res) {
  if (batch_fenced("finish_batch", runs_of(rows), res) || fencing_.fenced) return;
  std::vector<QueuedFinish> lost;
  for (const auto& row : rows) {
    const protocol::AttemptRef ref{row.run.value, row.attempt.attempt, row.attempt.lease_token};
    if (!res || !res->applied.count(row.run.value)) {
      log(LogLevel::debug, fmt::format("run_write_conflict op=finish run={} epoch={}", row.run.value, epoch_.value));
      if (auto m = messages.find(row.run.value); m != messages.end()) lost.push_back(m->second);
      continue;
    }
    const auto m = messages.find(row.run.value);
    if (m != messages.end())
      finished(m->second.job, std::string(to_string(row.finish.final_state)), m->second.message.duration_ms);
    log(LogLevel::info,
        fmt::format("run_finished run={} job={} attempt={} worker={} outcome={} state={} epoch={}", row.run.value,
                    json_quote(m != messages.end() ? m->second.job : std::string()), row.attempt.attempt,
                    json_quote(row.attempt.worker_id), to_string(row.finish.final_state),
                    row.retry_delay ? "RETRY_WAITING" : to_string(row.finish.final_state), epoch_.value));
    tracked_.erase(row.run.value);
    send(row.attempt.worker_id, protocol::FinishAck{ref});
  }
  if (res) pass_.dispatch_requested = true;  // capacity was freed
  if (lost.empty()) return;
  // Judged again at once on a fresh read (written in the next batch, or
  // acknowledged without a write), not left to the worker's resend: until
  // its finish is written, a success exists only on the worker, and a
  // worker lost now would leave it to the continuation deadline. After a
  // failed read, nothing is acknowledged: the worker sends it again.
  count(Counter::conflict_writes, static_cast<std::int64_t>(lost.size()));
  distrust();
  with_fresh_view(resume::FinishesAfterRead{std::move(lost)});
}

void RunBook::viewed(resume::FinishesAfterRead& s, bool fresh) {
  if (!fresh) return;
  for (const auto& f : s.lost) on_finish(f.worker, f.message, true);
}

}  // namespace baton::leader_core
