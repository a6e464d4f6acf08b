#include "baton/base/run_state.h"

#include <algorithm>

namespace baton {

std::string_view to_string(RunState s) {
  switch (s) {
    case RunState::pending: return "PENDING";
    case RunState::assigned: return "ASSIGNED";
    case RunState::running: return "RUNNING";
    case RunState::retry_waiting: return "RETRY_WAITING";
    case RunState::orphaned: return "ORPHANED";
    case RunState::succeeded: return "SUCCEEDED";
    case RunState::failed: return "FAILED";
    case RunState::timed_out: return "TIMED_OUT";
    case RunState::canceled: return "CANCELED";
  }
  return "?";
}

std::optional<RunState> parse_run_state(std::string_view s) {
  for (RunState r : all_run_states)
    if (to_string(r) == s) return r;
  return std::nullopt;
}

bool is_terminal(RunState s) {
  return s == RunState::succeeded || s == RunState::failed || s == RunState::timed_out || s == RunState::canceled;
}

bool legal_transition(RunState from, RunState to) {
  using S = RunState;
  switch (from) {
    // -> FAILED from where a run waits: it can never be dispatched (its
    // definition does not decode; schemas/0005).
    case S::pending: return to == S::assigned || to == S::failed || to == S::canceled;
    case S::assigned: return to == S::running || to == S::orphaned || to == S::canceled;
    case S::orphaned: return to == S::assigned || to == S::failed || to == S::canceled;
    case S::running:
      return to == S::succeeded || to == S::failed || to == S::timed_out || to == S::retry_waiting || to == S::canceled;
    // -> SUCCEEDED: a late success of the attempt still waiting to be
    // retried (schemas/0004_late_success.sql).
    case S::retry_waiting: return to == S::assigned || to == S::succeeded || to == S::failed || to == S::canceled;
    case S::succeeded:
    case S::failed:
    case S::timed_out:
    case S::canceled: return false;
  }
  return false;
}

std::string_view to_string(ContinuationState s) { return s == ContinuationState::none ? "NONE" : "CONFIRMING"; }

std::chrono::milliseconds retry_backoff(int attempt, std::chrono::milliseconds base, std::chrono::milliseconds cap,
                                        std::chrono::milliseconds jitter) {
  const int exponent = std::clamp(attempt - 1, 0, 10);
  const auto raw = base * (std::int64_t{1} << exponent);
  return std::min(raw, cap) + jitter;
}

}  // namespace baton
