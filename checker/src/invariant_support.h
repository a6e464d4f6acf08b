#pragma once
// Internal to the checker: what every invariant function uses to build its
// result (the evidence kept, the excuses, how an execution is described, the
// documented at-least-once window).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "baton/checker/checker.h"
#include "baton/checker/history.h"

// The checker's own assertion (it shares no code with the coordinator it
// judges, base/assert.h included): a broken rule of the checker itself
// aborts, in every build type, rather than yield a report that misleads.
#define CHECKER_ASSERT(cond)                                                                             \
  do {                                                                                                   \
    if (!(cond)) {                                                                                       \
      std::fprintf(stderr, "baton-checker: assertion failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                                      \
    }                                                                                                    \
  } while (0)

namespace baton::checker::checks {
inline constexpr std::size_t evidence_max = 40;
inline constexpr std::int64_t ms_ns = 1'000'000;

// The checker's own copy of SPEC section 3 (deliberately not core's).
inline bool legal(const std::string& from, const std::string& to) {
  static const std::set<std::pair<std::string, std::string>> allowed = {
      {"PENDING", "ASSIGNED"},       {"PENDING", "CANCELED"},       {"ASSIGNED", "RUNNING"},
      {"ASSIGNED", "ORPHANED"},      {"ASSIGNED", "CANCELED"},      {"ORPHANED", "ASSIGNED"},
      {"ORPHANED", "FAILED"},        {"ORPHANED", "CANCELED"},      {"RUNNING", "SUCCEEDED"},
      {"RUNNING", "FAILED"},         {"RUNNING", "TIMED_OUT"},      {"RUNNING", "RETRY_WAITING"},
      {"RUNNING", "CANCELED"},       {"RETRY_WAITING", "ASSIGNED"}, {"RETRY_WAITING", "CANCELED"},
      {"RETRY_WAITING", "SUCCEEDED"}};
  if (from.empty()) return to == "PENDING";
  if (from == to) return from == "ASSIGNED" || from == "RUNNING";  // continuation, epoch re-stamp, heartbeat
  return allowed.count({from, to}) > 0;
}

/// Whether a run is judged here, or only context for others (History::context_runs).
inline bool judged(const History& h, std::int64_t run) { return !h.context_runs.count(run); }

inline bool terminal(const std::string& s) {
  return s == "SUCCEEDED" || s == "FAILED" || s == "TIMED_OUT" || s == "CANCELED";
}

inline InvariantResult invariant(std::string name, std::string description) {
  InvariantResult r;
  r.name = std::move(name);
  r.description = std::move(description);
  return r;
}

inline void add(InvariantResult& r, const std::string& evidence) {
  r.violations++;
  if (r.evidence.size() < evidence_max) r.evidence.push_back(evidence);
}
inline void excuse(InvariantResult& r, const std::string& why) {
  r.excused++;
  if (r.excuses.size() < evidence_max) r.excuses.push_back(why);
}

inline std::string ms(std::int64_t ns) { return std::to_string(ns / ms_ns) + " ms"; }

inline std::string describe(const Execution& x) {
  std::ostringstream o;
  if (x.root_pid == 0) {  // an attempt as the database recorded it (executions_from_attempts)
    o << "run " << x.run << " attempt " << x.attempt << " on " << (x.worker.empty() ? "?" : x.worker)
      << " (as recorded)";
    return o.str();
  }
  o << "attempt " << x.attempt << " on " << (x.worker.empty() ? "?" : x.worker) << " (pid " << x.root_pid << ", "
    << x.processes.size() << " process" << (x.processes.size() == 1 ? "" : "es") << ")";
  return o.str();
}

/// Why a later execution of a run after `x` is allowed, or "" if it is not.
/// Two cases, both documented in docs/chaos.md:
///  - x's worker was cut off (partitioned from the leader, paused, or killed
///    and not yet restarted) for longer than the continuation timeout plus
///    margin while x was its attempt: the leader may retry, and x's tree has
///    been killed by then (or x ended, and its finish waited in the outbox
///    of a worker that was not there to send it);
///  - x's worker was killed after x ended and x's finish was not durable
///    (absent from the outbox snapshot taken while the worker was down):
///    within a second of the exit (the outbox's group commit), or at any
///    time while the worker was stopped since before the exit.
inline std::string at_least_once_reason(const History& h, const Execution& x, std::int64_t next_start_ns) {
  // The run's own continuation timeout (the largest it carried: nodes may be
  // configured differently), else the configured one.
  std::int64_t continuation_ms = 0;
  for (const auto& t : h.transitions)
    if (t.run == x.run && t.continuation_ms) continuation_ms = std::max(continuation_ms, *t.continuation_ms);
  if (continuation_ms == 0) continuation_ms = h.window.continuation_ms;
  const std::int64_t window_ns = (continuation_ms + h.window.continuation_margin_ms) * ms_ns;
  for (const auto& f : h.faults) {
    // Cut off: partitioned, stopped, or killed (its durable finish waits in
    // the outbox of a process that is not running) -- for longer than the
    // leader waits before it gives the attempt up.
    // (`worker_cut_off` is the simulator's: a worker without a leader, from
    // whatever chain of faults.)
    if (f.target != x.worker || (f.fault != "partition_workers" && f.fault != "pause_worker" &&
                                 f.fault != "kill9_worker" && f.fault != "worker_cut_off"))
      continue;
    if (f.to_ns - f.from_ns < window_ns) continue;
    if (f.from_ns > next_start_ns || f.to_ns < x.from_ns) continue;
    return x.worker + " cut off by " + f.fault + " for " + ms(f.to_ns - f.from_ns) + " (continuation + margin " +
           ms(window_ns) + ")";
  }
  if (x.main && x.main->exit_status) {
    const std::int64_t ended = x.main->last_ns;
    for (const auto& f : h.faults) {
      // Only a kill within a second of the exit can have beaten the outbox's
      // fsync (one group commit, milliseconds after the exit); a kill later
      // than that found the finish on disk, or acknowledged, so it excuses nothing.
      // A worker stopped (paused) from before the exit until the kill could
      // not write it at all, however long that was.
      const bool stopped_throughout = std::any_of(h.faults.begin(), h.faults.end(), [&](const FaultWindow& p) {
        return p.fault == "pause_worker" && p.target == x.worker && p.from_ns <= ended && p.to_ns >= f.from_ns;
      });
      if (f.fault != "kill9_worker" || f.target != x.worker || f.from_ns < ended || f.from_ns > next_start_ns ||
          (f.from_ns > ended + 1000 * ms_ns && !stopped_throughout))
        continue;
      const bool durable = std::any_of(h.durable_finishes.begin(), h.durable_finishes.end(), [&](const auto& d) {
        return d.run == x.run && d.attempt == x.attempt && d.token == x.token;
      });
      if (!durable)
        return x.worker + " killed " + ms(f.from_ns - ended) + " after the task exited, before its finish was durable";
    }
  }
  return "";
}

}  // namespace baton::checker::checks
