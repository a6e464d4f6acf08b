#pragma once
// The JobRun state machine of SPEC section 3. The same table is enforced by
// the database trigger baton_job_runs_guard (schemas/0001_init.sql); this copy
// lets pure decision code and fakes reject what the database would.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace baton {

enum class RunState {
  pending,
  assigned,
  running,
  retry_waiting,
  orphaned,
  succeeded,
  failed,
  timed_out,
  canceled,
};

inline constexpr std::array<RunState, 9> all_run_states{
    RunState::pending,   RunState::assigned, RunState::running,   RunState::retry_waiting, RunState::orphaned,
    RunState::succeeded, RunState::failed,   RunState::timed_out, RunState::canceled};

/// The database spelling ("PENDING", ...).
std::string_view to_string(RunState s);
std::optional<RunState> parse_run_state(std::string_view s);

bool is_terminal(RunState s);
/// Forward-only transition table; same-state writes are not transitions.
bool legal_transition(RunState from, RunState to);

enum class ContinuationState { none, confirming };
std::string_view to_string(ContinuationState s);

/// Capped exponential backoff of seed 003: base * 2^min(attempt-1, 10),
/// capped at `cap`, plus `jitter` (drawn by the caller, so this stays pure).
std::chrono::milliseconds retry_backoff(int attempt, std::chrono::milliseconds base, std::chrono::milliseconds cap,
                                        std::chrono::milliseconds jitter);

}  // namespace baton
