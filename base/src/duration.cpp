#include "baton/base/duration.h"

#include <charconv>
#include <cstdint>
#include <limits>

namespace baton {

std::optional<Millis> parse_duration(std::string_view text, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<Millis> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (text.empty()) return fail("empty duration; write e.g. 500ms, 3s, 2m");
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return fail("'" + std::string(text) + "' does not start with a number; write e.g. 500ms, 3s, 2m");
  std::int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc{} || ptr != text.data() + digits) return fail("'" + std::string(text) + "' is out of range");
  std::string_view unit = text.substr(digits);
  std::int64_t scale = 0;
  if (unit == "ms")
    scale = 1;
  else if (unit == "s")
    scale = 1000;
  else if (unit == "m")
    scale = 60 * 1000;
  else if (unit == "h")
    scale = 60 * 60 * 1000;
  else if (unit.empty())
    return fail("'" + std::string(text) + "' has no unit; write e.g. 500ms, 3s, 2m");
  else
    return fail("'" + std::string(text) + "' has unknown unit '" + std::string(unit) + "' (use ms, s, m or h)");
  if (n > std::numeric_limits<std::int64_t>::max() / scale) return fail("'" + std::string(text) + "' is out of range");
  return Millis{n * scale};
}

std::string format_duration(Millis d) {
  auto ms = d.count();
  if (ms != 0 && ms % 3600000 == 0) return std::to_string(ms / 3600000) + "h";
  if (ms != 0 && ms % 60000 == 0) return std::to_string(ms / 60000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace baton
