#include "baton/leader_core/cron.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <vector>

namespace baton::leader_core {

namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::sys_seconds;

constexpr seconds kMaxEvery = hours{43800};  // 5 * 365 days, below kCronSearchWindow

struct Token {
  std::string_view text;
  std::size_t pos;  // offset of text in the whole expression
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::vector<Token> split_whitespace(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size()) break;
    std::size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    out.push_back({s.substr(start, i - start), start});
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Digits to a number, saturating at a value larger than any valid one.
std::uint64_t to_number(std::string_view digits) {
  std::uint64_t v = 0;
  for (char c : digits) {
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
    if (v > 1'000'000'000'000ULL) return 1'000'000'000'000ULL;
  }
  return v;
}

constexpr std::array<std::string_view, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                          "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> kDayNames = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

enum class Names { none, months, days };

struct FieldSpec {
  const char* name;
  unsigned min;
  unsigned max;       // largest value accepted in the expression
  unsigned star_max;  // upper end of "*" and "a/n"
  Names names;
};

constexpr FieldSpec kSecond{"second", 0, 59, 59, Names::none};
constexpr FieldSpec kMinute{"minute", 0, 59, 59, Names::none};
constexpr FieldSpec kHour{"hour", 0, 23, 23, Names::none};
constexpr FieldSpec kDom{"day-of-month", 1, 31, 31, Names::none};
constexpr FieldSpec kMonth{"month", 1, 12, 12, Names::months};
constexpr FieldSpec kDow{"day-of-week", 0, 7, 6, Names::days};

struct FieldParser {
  const FieldSpec& spec;
  std::string_view text;
  std::size_t base;  // offset of text in the whole expression
  std::size_t i = 0;
  std::optional<CronParseError> error;

  bool fail(std::size_t at, std::string msg) {
    error = CronParseError{base + at, std::string(spec.name) + " field: " + msg};
    return false;
  }

  // A run of letters/digits starting at i: a number or (months/days) a name.
  bool value(unsigned& out) {
    const std::size_t start = i;
    while (i < text.size() && (is_digit(text[i]) || is_alpha(text[i]))) ++i;
    const std::string_view tok = text.substr(start, i - start);
    if (tok.empty()) {
      if (start == text.size()) return fail(start, "missing value at end of field");
      return fail(start, std::string("unexpected character '") + text[start] + "', expected a value");
    }
    bool all_digits = true, all_alpha = true;
    for (char c : tok) {
      all_digits = all_digits && is_digit(c);
      all_alpha = all_alpha && is_alpha(c);
    }
    if (all_digits) {
      const std::uint64_t v = to_number(tok);
      if (v < spec.min || v > spec.max) {
        return fail(start, "value " + std::string(tok) + " out of range " + std::to_string(spec.min) + "-" +
                               std::to_string(spec.max));
      }
      out = static_cast<unsigned>(v);
      return true;
    }
    if (!all_alpha) return fail(start, "invalid value \"" + std::string(tok) + "\"");
    if (spec.names == Names::none) return fail(start, "names are not allowed here, got \"" + std::string(tok) + "\"");
    const std::string l = lower(tok);
    if (spec.names == Names::months) {
      for (std::size_t k = 0; k < kMonthNames.size(); ++k) {
        if (l == kMonthNames[k]) return out = static_cast<unsigned>(k + 1), true;
      }
      return fail(start, "unknown name \"" + std::string(tok) + "\", expected JAN-DEC");
    }
    for (std::size_t k = 0; k < kDayNames.size(); ++k) {
      if (l == kDayNames[k]) return out = static_cast<unsigned>(k), true;
    }
    return fail(start, "unknown name \"" + std::string(tok) + "\", expected SUN-SAT");
  }

  bool step(unsigned& out) {
    const std::size_t start = i;
    while (i < text.size() && (is_digit(text[i]) || is_alpha(text[i]))) ++i;
    const std::string_view tok = text.substr(start, i - start);
    if (tok.empty()) return fail(start, "missing step after '/'");
    for (char c : tok) {
      if (!is_digit(c)) return fail(start, "step must be a number, got \"" + std::string(tok) + "\"");
    }
    const std::uint64_t v = to_number(tok);
    if (v < 1 || v > spec.max) {
      return fail(start, "step " + std::string(tok) + " out of range 1-" + std::to_string(spec.max));
    }
    out = static_cast<unsigned>(v);
    return true;
  }

  // One list element: ("*" | value ["-" value]) ["/" step].
  bool element(std::uint64_t& mask) {
    const std::size_t start = i;
    if (i == text.size() || text[i] == ',') return fail(start, "empty list element");
    unsigned lo = 0, hi = 0, by = 1;
    bool star = false;
    if (text[i] == '*') {
      star = true;
      ++i;
      lo = spec.min;
      hi = spec.star_max;
    } else {
      if (!value(lo)) return false;
      hi = lo;
      if (i < text.size() && text[i] == '-') {
        ++i;
        if (i == text.size() || text[i] == ',' || text[i] == '/') return fail(i, "missing range end after '-'");
        if (!value(hi)) return false;
        if (hi < lo) {
          return fail(start,
                      "range " + std::string(text.substr(start, i - start)) + " is backwards (start is after end)");
        }
      } else if (i < text.size() && text[i] == '/') {
        hi = std::max(lo, spec.star_max);  // "a/n" means a-max/n
      }
    }
    if (i < text.size() && text[i] == '/') {
      ++i;
      if (!step(by)) return false;
    }
    if (i < text.size() && text[i] != ',') {
      return fail(i, std::string("unexpected character '") + text[i] + "'" + (star ? " after '*'" : ""));
    }
    for (unsigned v = lo; v <= hi; v += by) mask |= std::uint64_t{1} << v;
    return true;
  }

  std::optional<std::uint64_t> parse() {
    std::uint64_t mask = 0;
    while (true) {
      if (!element(mask)) return std::nullopt;
      if (i == text.size()) break;
      ++i;  // ','
      if (i == text.size()) {
        fail(i, "empty list element");
        return std::nullopt;
      }
    }
    if (spec.names == Names::days && (mask & (std::uint64_t{1} << 7))) {
      mask = (mask | 1) & ~(std::uint64_t{1} << 7);  // 7 is Sunday
    }
    return mask;
  }
};

std::variant<CronSchedule, CronParseError> parse_every(std::string_view expr, const std::vector<Token>& toks) {
  if (toks.size() < 2) return CronParseError{expr.size(), "@every: missing duration, e.g. \"@every 10s\""};
  if (toks.size() > 2) {
    return CronParseError{toks[2].pos, "@every: unexpected \"" + std::string(toks[2].text) + "\" after the duration"};
  }
  const Token& d = toks[1];
  std::size_t n = 0;
  while (n < d.text.size() && is_digit(d.text[n])) ++n;
  const std::string unit = lower(d.text.substr(n));
  const std::uint64_t ms_per_unit = unit == "ms"  ? 1
                                    : unit == "s" ? 1000
                                    : unit == "m" ? 60'000
                                    : unit == "h" ? 3'600'000
                                                  : 0;
  if (n == 0 || ms_per_unit == 0) {
    return CronParseError{d.pos, "@every: invalid duration \"" + std::string(d.text) +
                                     "\", expected an integer followed by ms, s, m or h (e.g. 10s)"};
  }
  const std::uint64_t v = to_number(d.text.substr(0, n));
  const std::string shown(d.text);
  if (v == 0) return CronParseError{d.pos, "@every: duration " + shown + " must be positive"};
  const std::uint64_t max_ms = static_cast<std::uint64_t>(kMaxEvery.count()) * 1000;
  if (v > max_ms / ms_per_unit) {
    return CronParseError{d.pos, "@every: duration " + shown + " exceeds the maximum of 43800h (5 years)"};
  }
  const std::uint64_t ms = v * ms_per_unit;
  if (ms < 1000) return CronParseError{d.pos, "@every: duration " + shown + " is below the minimum of 1s"};
  if (ms % 1000 != 0) {
    return CronParseError{d.pos, "@every: duration " + shown + " is not a whole number of seconds"};
  }
  CronSchedule s;
  s.every = seconds{static_cast<seconds::rep>(ms / 1000)};
  return s;
}

std::variant<CronSchedule, CronParseError> parse_macro(std::string_view expr, const std::vector<Token>& toks) {
  const std::string name = lower(toks[0].text);
  if (name == "@every") return parse_every(expr, toks);
  const char* fields = nullptr;
  if (name == "@yearly" || name == "@annually") fields = "0 0 0 1 1 *";
  if (name == "@monthly") fields = "0 0 0 1 * *";
  if (name == "@weekly") fields = "0 0 0 * * 0";
  if (name == "@daily" || name == "@midnight") fields = "0 0 0 * * *";
  if (name == "@hourly") fields = "0 0 * * * *";
  if (fields == nullptr) {
    return CronParseError{toks[0].pos, "unknown macro \"" + std::string(toks[0].text) +
                                           "\", expected @yearly, @annually, @monthly, @weekly, @daily, "
                                           "@midnight, @hourly or @every <duration>"};
  }
  if (toks.size() > 1) {
    return CronParseError{toks[1].pos,
                          "unexpected \"" + std::string(toks[1].text) + "\" after " + std::string(toks[0].text)};
  }
  return parse_cron(fields);
}

// ---- next_fire ------------------------------------------------------------

// The smallest allowed value >= from, or -1.
int next_in(std::uint64_t mask, unsigned from) {
  if (from >= 64) return -1;
  const std::uint64_t rest = mask >> from;
  if (rest == 0) return -1;
  return static_cast<int>(from + static_cast<unsigned>(std::countr_zero(rest)));
}

bool has(std::uint64_t mask, unsigned v) { return v < 64 && ((mask >> v) & 1) != 0; }

bool day_matches(const CronSchedule& s, sys_days day, unsigned dom) {
  const bool dom_ok = has(s.days_of_month, dom);
  const bool dow_ok = has(s.days_of_week, std::chrono::weekday(day).c_encoding());
  if (s.dom_star || s.dow_star) return dom_ok && dow_ok;
  return dom_ok || dow_ok;
}

// Whole divisions rounding towards minus infinity.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// The first local wall-clock time strictly after `after_local` that the
// fields match, within kCronSearchWindow. Local times are naive (the fields of
// the wall clock), so this knows nothing about zones.
std::optional<sys_seconds> next_local_match(const CronSchedule& s, sys_seconds after_local) {
  if (s.seconds == 0 || s.minutes == 0 || s.hours == 0 || s.days_of_month == 0 || s.months == 0 ||
      s.days_of_week == 0) {
    return std::nullopt;
  }

  // Walk the local wall clock forward, jumping to the start of the next
  // month / day / hour / minute whenever the current one cannot match.
  const sys_seconds start = after_local + seconds{1};
  const sys_seconds limit = after_local + kCronSearchWindow;
  sys_seconds t = start;
  while (t <= limit) {
    const sys_days day = std::chrono::floor<days>(t);
    const std::chrono::year_month_day ymd{day};
    const unsigned month = static_cast<unsigned>(ymd.month());
    if (!has(s.months, month)) {
      const auto first_of_month = ymd.year() / ymd.month() / 1;
      t = sys_days{first_of_month + std::chrono::months{1}};
      continue;
    }
    if (!day_matches(s, day, static_cast<unsigned>(ymd.day()))) {
      t = day + days{1};
      continue;
    }
    const std::chrono::hh_mm_ss tod{t - day};
    const unsigned h = static_cast<unsigned>(tod.hours().count());
    const unsigned m = static_cast<unsigned>(tod.minutes().count());
    const unsigned sec = static_cast<unsigned>(tod.seconds().count());
    const int nh = next_in(s.hours, h);
    if (nh < 0) {
      t = day + days{1};
      continue;
    }
    if (static_cast<unsigned>(nh) != h) {
      t = day + hours{nh};
      continue;
    }
    const int nm = next_in(s.minutes, m);
    if (nm < 0) {
      t = day + hours{h + 1};
      continue;
    }
    if (static_cast<unsigned>(nm) != m) {
      t = day + hours{h} + minutes{nm};
      continue;
    }
    const int ns = next_in(s.seconds, sec);
    if (ns < 0) {
      t = day + hours{h} + minutes{m + 1};
      continue;
    }
    t = day + hours{h} + minutes{m} + seconds{ns};
    if (t > limit) break;
    return t;
  }
  return std::nullopt;
}

}  // namespace

std::variant<CronSchedule, CronParseError> parse_cron(std::string_view expr) {
  const std::vector<Token> toks = split_whitespace(expr);
  if (toks.empty()) return CronParseError{0, "empty cron expression"};
  if (toks[0].text.front() == '@') return parse_macro(expr, toks);
  if (toks.size() < 5) {
    return CronParseError{expr.size(), "expected 5 or 6 fields (6 = with seconds), got " + std::to_string(toks.size())};
  }
  if (toks.size() > 6) {
    return CronParseError{toks[6].pos, "expected 5 or 6 fields (6 = with seconds), got " + std::to_string(toks.size())};
  }
  const bool with_seconds = toks.size() == 6;
  static constexpr std::array<const FieldSpec*, 6> kSpecs = {&kSecond, &kMinute, &kHour, &kDom, &kMonth, &kDow};
  std::array<std::uint64_t, 6> masks{};
  masks[0] = 1;  // 5 fields: second 0
  for (std::size_t f = with_seconds ? 0 : 1; f < 6; ++f) {
    const Token& t = toks[with_seconds ? f : f - 1];
    FieldParser p{*kSpecs[f], t.text, t.pos, 0, std::nullopt};
    const std::optional<std::uint64_t> m = p.parse();
    if (!m) return *p.error;
    masks[f] = *m;
  }
  CronSchedule s;
  s.seconds = masks[0];
  s.minutes = masks[1];
  s.hours = masks[2];
  s.days_of_month = masks[3];
  s.months = masks[4];
  s.days_of_week = masks[5];
  s.dom_star = toks[with_seconds ? 3 : 2].text.front() == '*';
  s.dow_star = toks[with_seconds ? 5 : 4].text.front() == '*';
  return s;
}

std::optional<sys_seconds> next_fire(const CronSchedule& s, sys_seconds after, const CronZone& zone) {
  // Keep year_month_day arithmetic far inside its range.
  constexpr sys_seconds kLow = sys_days{std::chrono::year{-30000} / 1 / 1};
  constexpr sys_seconds kHigh = sys_days{std::chrono::year{30000} / 1 / 1};
  if (after < kLow || after > kHigh) return std::nullopt;

  if (s.is_every()) {
    const std::int64_t p = s.every.count();
    const sys_seconds next{seconds{(floor_div(after.time_since_epoch().count(), p) + 1) * p}};
    if (next - after > kCronSearchWindow) return std::nullopt;
    return next;
  }
  const ZonePeriod period = zone.period_at(after);
  if (!zone.has_transitions()) {
    auto local = next_local_match(s, after + period.offset);
    if (!local) return std::nullopt;
    return *local - period.offset;
  }

  // Walk the matching local times and map each to the instants it denotes
  // (docs/scheduling.md, "Daylight-saving time"): a local time the clocks
  // skipped fires at the jump; a repeated one fires in its first pass only,
  // unless the schedule fires every hour, which then fires in both.
  const bool every_hour = (s.hours & 0xFFFFFFull) == 0xFFFFFFull;
  sys_seconds from_local = after + period.offset;
  if (period.end - after <= days{1}) {
    // `after` is just before a transition. If the clocks go back, local times
    // before `from_local` come round again after it: start the walk at them.
    const ZonePeriod next = zone.period_at(period.end);
    if (next.offset < period.offset) from_local = std::min(from_local, period.end + next.offset - seconds{1});
  }
  std::optional<sys_seconds> best;
  for (sys_seconds local = from_local;;) {
    const std::optional<sys_seconds> match = next_local_match(s, local);
    if (!match || *match - from_local > kCronSearchWindow) break;
    local = *match;
    const LocalInstants in = zone.instants_of(local);
    // First passes never go backwards as the local time grows, so nothing
    // after this local time can fire before `best`.
    if (best && in.at[0] >= *best) break;
    const std::size_t usable = (in.kind == LocalInstants::Kind::repeated && every_hour) ? in.count : 1;
    for (std::size_t i = 0; i < usable; ++i) {
      if (in.at[i] > after && (!best || in.at[i] < *best)) best = in.at[i];
    }
    if (best && *best == in.at[0]) break;
  }
  return best;
}

std::optional<sys_seconds> next_fire(const CronSchedule& s, sys_seconds after, minutes utc_offset) {
  if (utc_offset > days{2} || utc_offset < -days{2}) return std::nullopt;
  return next_fire(s, after, CronZone::fixed(utc_offset));
}

std::optional<sys_seconds> next_fire(const CronSchedule& s, sys_seconds after, std::string_view time_zone) {
  auto zone = CronZone::locate(time_zone);
  if (auto* z = std::get_if<CronZone>(&zone)) return next_fire(s, after, *z);
  return std::nullopt;
}

}  // namespace baton::leader_core
