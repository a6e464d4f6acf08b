#pragma once
// Whether the worker's own loop stood still long enough that what it reads
// next may be stale. Pure: the Agent (and the simulator's workers) call it
// on every tick of the loop and before acting on a frame, with the
// monotonic time.
//
// Why: a worker that was stopped (SIGSTOP, a VM paused, a loop blocked)
// finds, when it runs again, the frames that reached its socket meanwhile,
// in order, before the close that may follow them. Among them can be an
// `assign` that carries the start grant (protocol 4), sent while the leader
// still counted the worker as attached. The leader has since detached the
// worker (silent for its heartbeat timeout), waited for the attempt's
// continuation timeout and margin, and retried it elsewhere; acting on that
// grant now would run a second execution of the run beside the retry. The
// 30-minute chaos run of seed 7 on 2026-11-26 caught exactly that: w2 was
// paused for 8.3 s (continuation + margin 6 s), and 0.3 s after the retry
// had started on w3 it started the old attempt from a frame that had waited
// in its socket. So a worker whose loop stood still for longer than the
// limit acts on nothing more from that connection: it drops it and
// reconnects, and its hello lists what it holds (a granted attempt it did
// not start is listed as assigned; the leader judges it from there).
#include "baton/base/clock.h"

namespace baton::worker_core {

class StallGuard {
 public:
  /// A loop that ran at least every `limit` is not stalled.
  explicit StallGuard(Millis limit) : limit_(limit) {}
  /// The limit for a worker given `heartbeat_interval` and
  /// `heartbeat_timeout` in its welcome: half of timeout - interval, at
  /// least 250 ms. The leader detaches a worker only after a whole timeout
  /// without a frame, and the worker's last heartbeat left at most one
  /// interval before a stop: a stop shorter than timeout - interval ends
  /// before any leader can have detached it, and half of that leaves room
  /// for a heartbeat that was slow on its way. Well above the loop's 100 ms
  /// tick, so a busy worker is not taken for a stopped one.
  static Millis limit_for(Millis heartbeat_interval, Millis heartbeat_timeout);
  void set_limit(Millis limit) { limit_ = limit; }
  Millis limit() const { return limit_; }
  /// The loop runs at `now`: true when it had not run for longer than the
  /// limit before (the first call only starts the count).
  bool stalled(MonoTime now);

 private:
  Millis limit_;
  bool started_ = false;
  MonoTime last_{};
};

}  // namespace baton::worker_core
