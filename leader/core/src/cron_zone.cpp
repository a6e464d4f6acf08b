#include "baton/leader_core/cron_zone.h"

#include <date/tz.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>

namespace baton::leader_core {

namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using std::chrono::sys_seconds;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<minutes> fixed_offset(std::string_view tz) {
  if (tz == "UTC" || tz == "Etc/UTC" || tz == "Z") return minutes{0};
  if (tz.size() != 6 || (tz[0] != '+' && tz[0] != '-') || tz[3] != ':') return std::nullopt;
  if (!is_digit(tz[1]) || !is_digit(tz[2]) || !is_digit(tz[4]) || !is_digit(tz[5])) return std::nullopt;
  const int hh = (tz[1] - '0') * 10 + (tz[2] - '0');
  const int mm = (tz[4] - '0') * 10 + (tz[5] - '0');
  if (mm > 59 || hh * 60 + mm > 18 * 60) return std::nullopt;
  const minutes off{hh * 60 + mm};
  return tz[0] == '-' ? -off : off;
}

// A name the date library may look up: letters, digits and "/_+-" only, so
// nothing like "../../etc/passwd" reaches its file lookups.
bool plausible_zone_name(std::string_view tz) {
  if (tz.empty() || tz.size() > 64 || tz.front() == '/' || tz.find("..") != std::string_view::npos) return false;
  for (char c : tz) {
    const bool ok =
        is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '/' || c == '_' || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

constexpr sys_seconds kFarFuture = std::chrono::sys_days{std::chrono::year{30000} / 1 / 1};

}  // namespace

CronZone CronZone::fixed(minutes offset) {
  CronZone z;
  z.fixed_offset_ = offset;
  z.name_ = offset == minutes{0} ? "UTC" : "fixed";
  return z;
}

std::variant<CronZone, std::string> CronZone::locate(std::string_view name) {
  if (auto off = fixed_offset(name)) {
    CronZone z = fixed(*off);
    z.name_ = std::string(name);
    return z;
  }
  if (name.empty())
    return std::string("time zone is empty: use an IANA name like \"Europe/Berlin\", \"UTC\" or \"+02:00\"");
  if (name[0] == '+' || name[0] == '-') {
    return "time zone \"" + std::string(name) + "\": a fixed offset must look like +HH:MM or -HH:MM, at most 18:00";
  }
  const std::string wanted(name);
  const date::time_zone* found = nullptr;
  if (plausible_zone_name(name)) {
    try {
      found = date::locate_zone(wanted);
    } catch (const std::exception&) {
      found = nullptr;  // not in the database
    }
  }
  if (found == nullptr) {
    return "time zone \"" + wanted +
           "\" is not a known IANA zone (names are case-sensitive, e.g. \"Europe/Berlin\", \"America/New_York\") "
           "nor a fixed offset like \"+02:00\"";
  }
  CronZone z;
  z.name_ = wanted;
  z.zone_ = found;
  return z;
}

ZonePeriod CronZone::period_at(sys_seconds t) const {
  if (zone_ == nullptr) return {fixed_offset_, kFarFuture};
  const date::sys_info i = zone_->get_info(t);
  return {i.offset, i.end};
}

LocalInstants CronZone::instants_of(sys_seconds local) const {
  LocalInstants out;
  if (zone_ == nullptr) {
    out.at[0] = local - fixed_offset_;
    return out;
  }
  const date::local_seconds l{local.time_since_epoch()};
  const date::local_info i = zone_->get_info(l);
  switch (i.result) {
    case date::local_info::unique: out.at[0] = local - i.first.offset; break;
    case date::local_info::nonexistent:
      // Fires at the jump: the first instant of the new offset.
      out.kind = LocalInstants::Kind::skipped;
      out.at[0] = i.first.end;
      break;
    case date::local_info::ambiguous:
      out.kind = LocalInstants::Kind::repeated;
      out.at[0] = local - i.first.offset;
      out.at[1] = local - i.second.offset;
      out.count = 2;
      break;
  }
  return out;
}

std::string format_iso8601(sys_seconds t, const CronZone& zone) {
  const seconds offset = zone.period_at(t).offset;
  const sys_seconds local = t + offset;
  const std::chrono::sys_days day = std::chrono::floor<std::chrono::days>(local);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss tod{local - day};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(tod.hours().count()), static_cast<int>(tod.minutes().count()),
                static_cast<int>(tod.seconds().count()));
  std::string out = buf;
  if (offset == seconds{0}) return out + "Z";
  const long total = std::abs(static_cast<long>(offset.count()));
  std::snprintf(buf, sizeof buf, "%c%02ld:%02ld", offset < seconds{0} ? '-' : '+', total / 3600, total / 60 % 60);
  return out + buf;
}

std::variant<sys_seconds, std::string> parse_iso8601(std::string_view text, const CronZone& zone) {
  const auto bad = [&](const std::string& why) {
    return "time \"" + std::string(text) + "\": " + why +
           " (expected YYYY-MM-DDTHH:MM[:SS] with an optional Z or +HH:MM, e.g. 2026-03-29T01:30:00Z)";
  };
  std::size_t i = 0;
  const auto number = [&](std::size_t width, int& out) {
    if (i + width > text.size()) return false;
    out = 0;
    for (std::size_t k = 0; k < width; ++k) {
      const char c = text[i + k];
      if (!is_digit(c)) return false;
      out = out * 10 + (c - '0');
    }
    i += width;
    return true;
  };
  const auto expect = [&](char c) {
    if (i < text.size() && text[i] == c) return ++i, true;
    return false;
  };
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!number(4, y) || !expect('-') || !number(2, mo) || !expect('-') || !number(2, d)) return bad("no date");
  if (!(expect('T') || expect(' ')) || !number(2, h) || !expect(':') || !number(2, mi)) return bad("no time of day");
  if (expect(':') && !number(2, s)) return bad("bad seconds");
  const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                        std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return bad("no such date");
  if (h > 23 || mi > 59 || s > 59) return bad("no such time of day");
  const sys_seconds wall = std::chrono::sys_days{ymd} + std::chrono::hours{h} + minutes{mi} + seconds{s};
  if (i == text.size()) return zone.instants_of(wall).at[0];
  if (expect('Z')) {
    if (i == text.size()) return wall;
    return bad("unexpected text after Z");
  }
  const char sign = text[i];
  if (sign != '+' && sign != '-') return bad("unexpected text after the time");
  ++i;
  int oh = 0, om = 0;
  if (!number(2, oh) || !expect(':') || !number(2, om) || i != text.size() || oh > 18 || om > 59)
    return bad("bad offset");
  const seconds offset = std::chrono::hours{oh} + minutes{om};
  return sign == '+' ? wall - offset : wall + offset;
}

std::optional<std::string> validate_time_zone(std::string_view name) {
  auto z = CronZone::locate(name);
  if (auto* e = std::get_if<std::string>(&z)) return *e;
  return std::nullopt;
}

}  // namespace baton::leader_core
