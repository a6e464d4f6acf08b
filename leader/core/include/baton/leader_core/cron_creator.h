#pragma once
// CronCreator: the leader's cron creation as one component -- each
// scheduled job's next slots planned from its schedule, zone and policy
// (parsed once per text), the creates made a few per pass in slot order,
// and those a pass may not make kept for the next passes. Pure: the book
// (RunBook) reads the scheduled jobs, emits the creates and skips it
// decides, and feeds their results back (run_book_cron.cpp).
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baton/base/clock.h"
#include "baton/leader_core/cron.h"
#include "baton/leader_core/cron_zone.h"
#include "baton/store/leader_rows.h"

namespace baton::leader_core {

// Cron slots created per job and pass, at most (the admission bound on
// catching up; the rest come on the next passes, oldest first).
inline constexpr std::size_t cron_slots_per_pass = 100;
// A due slot at most this late is on time: planning latency, not a misfire.
inline constexpr std::chrono::seconds cron_skip_tolerance{2};
// Cron runs are created this far ahead of their slot: the dispatcher does
// not see them before the slot, and the book wakes at the slot, so a run
// starts within a few milliseconds of its slot instead of up to a
// materialisation period late.
inline constexpr Millis cron_lookahead{1500};
// The cron step (the next slots' creates: one statement each, about 70 ms
// for 100 jobs, during which the loop does nothing else) is put off while a
// wake-up -- a slot, a held start -- is this close, so that a slot's starts
// never wait behind the next slot's creates; but never for longer than
// cron_defer_max, which the lookahead covers with room to spare.
inline constexpr Millis cron_quiet_before{150};
inline constexpr Millis cron_defer_max{1000};
static_assert(cron_defer_max + cron_quiet_before < cron_lookahead);
// At most this many creates in one pass (about 15 ms of the loop); the rest
// wait in the backlog for the next passes, and none starts while a wake-up
// is within cron_quiet_before. Without it, a step that had many creates to
// make (100 jobs added at once: two slots each, ~150 ms) held the loop past
// the first slot, whose starts then waited behind it (a slot 136 ms late).
inline constexpr std::size_t cron_creates_per_pass = 20;

/// A job's slots to create, one after another, from `next` on.
struct CronChain {
  std::string job;
  std::vector<std::int64_t> slots;  ///< unix seconds; the caught-up (late) ones first
  std::size_t caught_up = 0;        ///< how many of `slots` are caught up
  std::size_t next = 0;
  /// The database's clock at the read that planned them and the book's
  /// monotonic time then: each slot's wake-up is counted from both, not
  /// from the create's return (the creates of a step run one after
  /// another, and a wake-up counted from each one's return was late by
  /// every create before it).
  std::int64_t now_unix_ms = 0;
  MonoTime read_at{};
  std::int64_t jitter_ms = 0;
};

/// What planning one scheduled job comes to.
struct CronJobStep {
  std::string job;
  /// Set when the job cannot be planned: what is wrong, as `key=value`
  /// text for the log (its schedule, or its zone and misfire policy).
  std::string invalid;
  /// Slots given up: recorded (and the cursor moved past them) before any
  /// later slot is created.
  std::vector<store::SkippedCronSlots> skipped;
  std::string skipped_details_json;  ///< {"policy": ..., "gap_cause": ...}
  CronChain chain;                   ///< the slots to create, maybe none
};

/// One create the book may make now.
struct CronCreate {
  std::int64_t slot = 0;  ///< unix seconds
  bool caught_up = false;
  std::int64_t jitter_delay_ms = 0;  ///< its run starts this long after the slot
  MonoTime due_at{};                 ///< when its run is due, on the book's clock
};

class CronCreator {
 public:
  /// Each job's next slots as of a read of the scheduled jobs that returned
  /// at `read_at` (the jobs carry the database's clock). A job whose
  /// schedule does not parse has a step (`invalid`) only the first time its
  /// text is seen.
  std::vector<CronJobStep> plan(const std::vector<store::ScheduledJob>& jobs, MonoTime read_at);

  /// A new pass: its budget of creates is whole again.
  void new_pass() { creates_in_pass_ = 0; }
  /// The create of `chain.slots[chain.next]` if this pass may make it now;
  /// nothing when the chain is done, or when it must wait (it is kept, from
  /// that slot on, for resume()). `last_cron` is when the book last read
  /// the scheduled jobs; `next_wakeup` its earliest wake-up, if any.
  std::optional<CronCreate> next(const CronChain& chain, MonoTime now, MonoTime last_cron,
                                 std::optional<MonoTime> next_wakeup);
  /// The chains earlier passes left, oldest first (taken: each goes back
  /// through next()).
  std::deque<CronChain> resume() { return std::exchange(backlog_, {}); }
  bool has_backlog() const { return !backlog_.empty(); }

 private:
  bool may_create(MonoTime due_at, MonoTime now, MonoTime last_cron, std::optional<MonoTime> next_wakeup) const;

  std::map<std::string, std::optional<CronSchedule>> schedules_;  ///< parsed once per text
  std::map<std::string, std::optional<CronZone>> zones_;          ///< located once per name
  std::deque<CronChain> backlog_;
  std::size_t creates_in_pass_ = 0;
};

}  // namespace baton::leader_core
