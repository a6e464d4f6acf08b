#pragma once
// What the run_book_*.cpp files share: small pure helpers and the
// timing constants. Internal to leader_core.
#include <chrono>
#include <string>
#include <vector>

#include "baton/base/json_text.h"
#include "baton/leader_core/run_book.h"

namespace baton::leader_core::run_book_detail {

using store::WriteOutcome;

/// How often the book looks for workers silent past their timeout: a
/// detach is at most this late.
inline constexpr Millis silent_check_every{100};
/// Events turned into runs per statement; a full batch goes on at the next pass.
inline constexpr int event_batch = 100;
/// SQL submissions taken per statement.
inline constexpr int submission_batch = 200;
/// Rows of each kind removed per retention statement; likewise.
inline constexpr int prune_batch = 500;
/// How long a start (on its own or written with its assignment) and a
/// heartbeat written now keep their run from being stale: the
/// baton_stale_runs view, an operator's signal that decides nothing. From
/// the run's worker's own cadence, which the leader stretches for a large
/// fleet (heartbeat_cadence.h); from the configured one, a stretched
/// worker's live runs were listed stale.
inline HeartbeatCadence configured_cadence(const RuntimeConfig& cfg) {
  return {cfg.heartbeat_interval, cfg.heartbeat_timeout};
}
inline Millis start_stale_after(const HeartbeatCadence& c) { return c.timeout + c.interval; }
inline Millis heartbeat_stale_after(const HeartbeatCadence& c) { return c.timeout * 2; }

inline protocol::AttemptRef ref_of(const store::ActiveRun& r) {
  return protocol::AttemptRef{r.id.value, r.attempt, r.lease_token};
}

/// True when `r` is in `state` and held by exactly this worker's attempt.
inline bool held_by(const store::ActiveRun& r, RunState state, const std::string& worker,
                    const protocol::AttemptRef& ref) {
  return r.state == state && r.worker_id == worker && r.attempt == ref.attempt && r.lease_token == ref.lease_token;
}

inline bool conflict(const Result<store::WriteResult>& w) { return w && w->outcome == WriteOutcome::conflict; }

/// The runs a batch of rows writes (each row's `run`).
template <class Row>
std::vector<RunId> runs_of(const std::vector<Row>& rows) {
  std::vector<RunId> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r.run);
  return out;
}

/// A finish's result: its duration and each task's result (recorded as the
/// attempt's task_results). Task names come from the job definition through
/// the worker: quoted, so no name can break the JSON.
/// `log_ref` (if any) names the attempt's output in the log archive: the
/// finish write sets the run's log_ref from it.
inline std::string result_json(const protocol::Finish& m, const std::string& log_ref = "") {
  std::string out = "{\"duration_ms\":" + std::to_string(m.duration_ms) + ",";
  if (!log_ref.empty()) out += "\"log_ref\":" + json_quote(log_ref) + ",";
  out += "\"tasks\":[";
  for (std::size_t i = 0; i < m.tasks.size(); ++i) {
    const auto& t = m.tasks[i];
    if (i) out += ',';
    out += "{\"name\":" + json_quote(t.name) + ",\"exit_code\":" + std::to_string(t.exit_code) +
           ",\"duration_ms\":" + std::to_string(t.duration_ms) + ",\"ok\":" + (t.ok ? "true" : "false") + "}";
  }
  return out + "]}";
}

}  // namespace baton::leader_core::run_book_detail
