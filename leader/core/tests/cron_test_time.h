#pragma once
// Instants for the cron tests: built from UTC calendar fields and shown as
// "YYYY-MM-DD HH:MM:SS" (UTC), so an expected time reads as written.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

namespace baton::leader_core::test {

inline std::chrono::sys_seconds utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  using namespace std::chrono;
  return sys_days{year{y} / month{mo} / day{d}} + hours{h} + minutes{mi} + seconds{s};
}

/// "YYYY-MM-DD HH:MM:SS", or "YYYY-MM-DD HH:MM" without the seconds.
inline std::string show(std::chrono::sys_seconds t, bool with_seconds = true) {
  using namespace std::chrono;
  const sys_days d = floor<days>(t);
  const year_month_day ymd{d};
  const hh_mm_ss tod{t - d};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02ld:%02ld", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<long>(tod.hours().count()), static_cast<long>(tod.minutes().count()));
  std::string out = buf;
  if (with_seconds) {
    std::snprintf(buf, sizeof buf, ":%02ld", static_cast<long>(tod.seconds().count()));
    out += buf;
  }
  return out;
}

inline std::string show(const std::optional<std::chrono::sys_seconds>& t) {
  return t ? show(*t) : std::string("nullopt");
}

}  // namespace baton::leader_core::test
