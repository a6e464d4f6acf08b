#pragma once
// Cron schedules: parsing cron expressions and computing the next fire time.
//
// Pure: no I/O, no clock reads, no global state. The caller passes "now"
// (`after`) and a resolved zone (cron_zone.h) in and gets an instant back, so
// every rule here is testable with fixed timestamps. This module must not
// read the system clock, touch files or the environment, log, throw for bad
// input (bad input is a CronParseError), or depend on the host's time zone.
//
// Accepted expressions:
//   * 5 fields  "min hour dom month dow"      (fires at second 0)
//   * 6 fields  "sec min hour dom month dow"
//   * macros    @yearly @annually @monthly @weekly @daily @midnight @hourly
//   * "@every <n><unit>", unit ms|s|m|h, whole seconds, 1s .. 43800h (5*365 days)
// Field syntax: "*", lists "a,b", ranges "a-b", steps "*/n", "a-b/n" and "a/n"
// (= a-max/n). Month names JAN-DEC and day names SUN-SAT, case-insensitive.
// Day-of-week is 0-7 with both 0 and 7 meaning Sunday ("*" and "a/n" cover
// 0-6). Vixie-cron day rule: if both day-of-month and day-of-week are
// restricted (neither field starts with '*') a day matches if EITHER matches;
// otherwise both must match.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "baton/leader_core/cron_zone.h"

namespace baton::leader_core {

/// A parsed schedule. Build it with parse_cron(); the members are public only
/// so tests and diagnostics can inspect them. Bit i of a mask set means value i
/// is allowed (days_of_month uses bits 1-31, months bits 1-12, days_of_week
/// bits 0-6 with 0 = Sunday).
struct CronSchedule {
  std::uint64_t seconds = 0;
  std::uint64_t minutes = 0;
  std::uint64_t hours = 0;
  std::uint64_t days_of_month = 0;
  std::uint64_t months = 0;
  std::uint64_t days_of_week = 0;
  bool dom_star = true;  ///< day-of-month field started with '*'
  bool dow_star = true;  ///< day-of-week field started with '*'
  /// Non-zero for "@every": fire at every multiple of this since the Unix
  /// epoch; the masks above are then unused.
  std::chrono::seconds every{0};

  bool is_every() const { return every.count() > 0; }
  friend bool operator==(const CronSchedule&, const CronSchedule&) = default;
};

struct CronParseError {
  std::size_t position;  ///< 0-based offset into the input of the offending token
  std::string message;   ///< names the field and what is wrong, e.g. "minute field: value 61 out of range 0-59"
};

std::variant<CronSchedule, CronParseError> parse_cron(std::string_view expr);

/// How far ahead next_fire looks (5 years) before giving up.
inline constexpr std::chrono::seconds kCronSearchWindow =
    std::chrono::floor<std::chrono::seconds>(std::chrono::years{5});

/// The first fire time strictly after `after`, as a UTC instant. The cron
/// fields are matched against the wall clock of `zone`; a wall-clock time the
/// clocks skip (spring forward) fires at the jump, one they pass twice (fall
/// back) fires once, in its first pass, unless the schedule's hour field
/// covers every hour, which then fires in both passes (docs/scheduling.md).
/// "@every" ignores the zone: its slots are multiples of the period since the
/// Unix epoch, so every node computes the same slots. nullopt if nothing
/// matches within kCronSearchWindow (e.g. "0 0 30 2 *").
std::optional<std::chrono::sys_seconds> next_fire(const CronSchedule& s, std::chrono::sys_seconds after,
                                                  const CronZone& zone = CronZone{});

/// next_fire at a fixed offset from UTC (local = utc + utc_offset).
std::optional<std::chrono::sys_seconds> next_fire(const CronSchedule& s, std::chrono::sys_seconds after,
                                                  std::chrono::minutes utc_offset);

/// next_fire in a named zone (CronZone::locate); nullopt for an unknown name.
std::optional<std::chrono::sys_seconds> next_fire(const CronSchedule& s, std::chrono::sys_seconds after,
                                                  std::string_view time_zone);

}  // namespace baton::leader_core
