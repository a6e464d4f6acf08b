#pragma once
// Which cron slots of one job to create now, and which to give up: a pure
// function of the job's schedule, zone and misfire settings, its cron cursor
// (the newest slot already created or given up), the database's clock and
// the lookahead. The shell (ControlLoop) reads the inputs from the database,
// records the skipped ranges in the decision ledger and creates the slots,
// in that order, each write fenced (docs/scheduling.md, "Missed slots").
//
// Rules:
//   - due slots are those after `last_slot` and at or before `db_now`; a job
//     never planned starts from `db_now - 1 s` (no history is invented);
//   - a due slot at most `skip_tolerance` late is on time (planning latency,
//     not a misfire) and kept; of the older, missed ones the policy keeps:
//     run_all the newest `catch_up_limit`, run_latest the newest one unless
//     an on-time slot is newer, skip none;
//   - a kept slot later than `starting_deadline` is not run either;
//   - every due slot not kept is reported in `skipped` (ranges, oldest
//     first), so the cursor passes it and the ledger explains it; a gap of
//     any length (no leader, a paused job, `live: false`) costs a bounded
//     walk and never stalls the job;
//   - at most `per_pass` slots are created per call, oldest first; the next
//     call continues from the newest one created;
//   - slots after `db_now` and up to `db_now + lookahead` are created ahead
//     (PENDING until their time), under every policy.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "baton/leader_core/cron.h"

namespace baton::leader_core {

enum class MisfirePolicy { run_all, run_latest, skip };

/// "run_all", "run_latest", "skip"; nullopt for anything else.
std::optional<MisfirePolicy> parse_misfire_policy(std::string_view s);
std::string_view to_string(MisfirePolicy p);

/// Why due slots were not run; the ledger's `reason`.
enum class SkipReason {
  misfire_policy,     ///< run_latest keeps only the newest, skip keeps none that are late
  catch_up_limit,     ///< run_all: older than the newest `catch_up_limit` missed slots
  starting_deadline,  ///< later than the job's starting deadline
};
std::string_view to_string(SkipReason r);

/// A range of consecutive due slots given up for one reason.
struct SkippedSlots {
  std::chrono::sys_seconds first;
  std::chrono::sys_seconds last;
  std::uint64_t count = 0;  ///< slots in [first, last]; a lower bound when !count_exact
  bool count_exact = true;  ///< false when the range was too long to count (kSkipCountCap)
  SkipReason reason = SkipReason::misfire_policy;
  friend bool operator==(const SkippedSlots&, const SkippedSlots&) = default;
};

/// Counting a skipped range stops here (a job firing every second, paused
/// for a year, skips 31 million slots; the ledger says "at least 100000").
inline constexpr std::uint64_t kSkipCountCap = 100'000;

struct CronPlanInput {
  CronSchedule schedule;
  CronZone zone;  ///< the job's time zone, resolved (CronZone::locate)
  MisfirePolicy policy = MisfirePolicy::run_latest;
  std::optional<std::chrono::sys_seconds> last_slot;  ///< the job's cron cursor
  std::chrono::sys_time<std::chrono::milliseconds> db_now;
  std::chrono::milliseconds lookahead{0};
  std::size_t catch_up_limit = 100;  ///< run_all: missed slots run after one gap, the newest
  std::size_t per_pass = 100;        ///< slots created per call, at most (admission bound)
  std::optional<std::chrono::milliseconds> starting_deadline;
  std::chrono::seconds skip_tolerance{2};
};

struct CronPlan {
  std::vector<SkippedSlots> skipped;            ///< record these first, oldest first
  std::vector<std::chrono::sys_seconds> slots;  ///< then create these, oldest first
  /// How many of `slots` were already late by more than `skip_tolerance`
  /// (catching up); the rest are on time or ahead.
  std::size_t caught_up = 0;
};

CronPlan plan_cron_slots(const CronPlanInput& in);

/// The delay of one slot's run within a job's `jitter`: a hash of the job's
/// name and the slot, so every leader computes the same one and a job's
/// runs spread evenly over [0, jitter_ms] instead of all starting on the
/// minute. 0 when jitter_ms is 0.
std::int64_t cron_jitter_ms(std::string_view job, std::chrono::sys_seconds slot, std::int64_t jitter_ms);

}  // namespace baton::leader_core
