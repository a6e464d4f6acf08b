#pragma once
// The time zone a cron schedule is read in: an IANA zone ("Europe/Berlin",
// rules from the system's tzdata through the date library, daylight-saving
// time included) or a fixed offset from UTC ("UTC", "+02:00", "-05:30").
//
// Resolving a name (CronZone::locate) reads the time zone database the first
// time any name is resolved in the process (the files under
// /usr/share/zoneinfo, once); everything after that, and every member of a
// resolved zone, is a pure function of its arguments. Shells resolve a job's
// zone when they read the job and hand the resolved zone to the planners.
//
// Local wall-clock times are carried as std::chrono::sys_seconds holding the
// wall clock's fields ("naive" local time, as a calendar would print it), so
// the cron walk can use the same calendar arithmetic for both.
#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace date {
class time_zone;
}

namespace baton::leader_core {

/// The instants one local wall-clock time denotes in a zone.
struct LocalInstants {
  enum class Kind {
    unique,    ///< one instant
    skipped,   ///< the clocks jumped over it (spring forward): `at[0]` is the jump
    repeated,  ///< the clocks passed it twice (fall back): `at[0]` < `at[1]`
  };
  Kind kind = Kind::unique;
  std::array<std::chrono::sys_seconds, 2> at{};
  std::size_t count = 1;  ///< 2 only for `repeated`
};

/// A zone's offset at one instant and until when it holds.
struct ZonePeriod {
  std::chrono::seconds offset{0};  ///< local = utc + offset
  std::chrono::sys_seconds end;    ///< first instant of the next period (far future for fixed offsets)
};

class CronZone {
 public:
  /// UTC.
  CronZone() = default;
  /// A fixed offset from UTC (local = utc + offset).
  static CronZone fixed(std::chrono::minutes offset);
  /// "UTC", "Etc/UTC", "Z", "+HH:MM" / "-HH:MM" (at most 18:00) or an IANA
  /// name from the system's tzdata. On failure, an error naming the input.
  static std::variant<CronZone, std::string> locate(std::string_view name);

  /// The name it was located by ("UTC" for the default).
  const std::string& name() const { return name_; }
  bool has_transitions() const { return zone_ != nullptr; }

  ZonePeriod period_at(std::chrono::sys_seconds t) const;
  LocalInstants instants_of(std::chrono::sys_seconds local) const;
  /// The wall clock at `t`.
  std::chrono::sys_seconds local_at(std::chrono::sys_seconds t) const { return t + period_at(t).offset; }

 private:
  std::string name_ = "UTC";
  std::chrono::seconds fixed_offset_{0};
  const date::time_zone* zone_ = nullptr;  ///< owned by the date library's database; lives for the process
};

/// nullopt if `name` can be located; otherwise the error message.
std::optional<std::string> validate_time_zone(std::string_view name);

/// ISO 8601 with the zone's offset at `t`: "2026-03-29T03:00:00+02:00"
/// ("Z" for a zero offset).
std::string format_iso8601(std::chrono::sys_seconds t, const CronZone& zone);

/// "2026-03-29T03:00:00+02:00", "...Z", or without an offset (then a wall
/// clock in `zone`; a skipped time is the jump, a repeated one its first
/// pass); seconds are optional ("2026-03-29T03:00Z"), "T" may be a space.
/// On failure, an error naming the text and the expected form.
std::variant<std::chrono::sys_seconds, std::string> parse_iso8601(std::string_view text, const CronZone& zone);

}  // namespace baton::leader_core
