#include "baton/base/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <ctime>
#include <optional>

namespace baton {

namespace {

std::string utc_timestamp(std::chrono::system_clock::time_point at) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(at);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(at - secs).count();
  const std::time_t t = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%06lldZ", static_cast<long long>(micros));
  return buf;
}

int syslog_priority(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::critical: return 2;
    case spdlog::level::err: return 3;
    case spdlog::level::warn: return 4;
    case spdlog::level::info: return 6;
    default: return 7;
  }
}

bool is_key(std::string_view k) {
  if (k.empty() || !(std::isalpha(static_cast<unsigned char>(k[0])) || k[0] == '_')) return false;
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

/// `s` as a JSON string literal.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

/// The end of a JSON string literal starting at `at` (a '"'), or npos.
std::size_t literal_end(std::string_view s, std::size_t at) {
  for (std::size_t i = at + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] == '"') return i + 1;
  }
  return std::string_view::npos;
}

/// An unquoted value as JSON: a number or a boolean as itself (an integer
/// up to 15 digits, a decimal up to 17 characters: exact in a double), any
/// other text as a string. A value written quoted stays a string.
std::string json_value(std::string_view v) {
  if (v == "true" || v == "false") return std::string(v);
  std::size_t i = v.size() > 1 && v[0] == '-' ? 1 : 0;
  const std::size_t digits_start = i;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
  const std::size_t int_digits = i - digits_start;
  const bool int_ok = int_digits > 0 && (int_digits == 1 || v[digits_start] != '0');
  if (int_ok && i == v.size() && int_digits <= 15) return std::string(v);
  if (int_ok && i < v.size() && v[i] == '.' && v.size() <= 17) {
    std::size_t f = i + 1;
    while (f < v.size() && v[f] >= '0' && v[f] <= '9') ++f;
    if (f == v.size() && f > i + 1) return std::string(v);
  }
  return quoted(v);
}

/// "event k=v k2=\"x y\" (free text)" as JSON members: "event":..., "k":...
/// (numbers and booleans typed), and "msg": the free text without its
/// parentheses, or the event's name when there is none (every line has a
/// msg, as slog's and zap's do).
std::string json_members(std::string_view m) {
  std::string out, text, event;
  bool first = true;
  std::size_t i = 0;
  while (i < m.size()) {
    while (i < m.size() && m[i] == ' ') ++i;
    if (i >= m.size()) break;
    // Free text from here on: a parenthesis, or a token that is no field.
    const std::size_t eq = m.find('=', i), space = m.find(' ', i);
    const bool field =
        eq != std::string_view::npos && (space == std::string_view::npos || eq < space) && is_key(m.substr(i, eq - i));
    if (first && !field && m[i] != '(' && m[i] != '"') {
      event = std::string(m.substr(i, space == std::string_view::npos ? m.size() - i : space - i));
      out += ",\"event\":" + quoted(event);
      first = false;
      i = space == std::string_view::npos ? m.size() : space;
      continue;
    }
    first = false;
    if (!field) {
      text += std::string(m.substr(i));
      break;
    }
    const std::string_view key = m.substr(i, eq - i);
    std::size_t v = eq + 1, end;
    std::string value;
    if (v < m.size() && m[v] == '"' && (end = literal_end(m, v)) != std::string_view::npos) {
      value = std::string(m.substr(v, end - v));  // already a JSON string (json_quote)
    } else {
      end = m.find(' ', v);
      if (end == std::string_view::npos) end = m.size();
      value = json_value(m.substr(v, end - v));
    }
    out += "," + quoted(key) + ":" + value;
    i = end;
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (text.size() >= 2 && text.front() == '(' && text.back() == ')') text = text.substr(1, text.size() - 2);
  if (!text.empty())
    out += ",\"msg\":" + quoted(text);
  else if (!event.empty())
    out += ",\"msg\":" + quoted(event);
  return out;
}

class LineFormatter final : public spdlog::formatter {
 public:
  LineFormatter(LogFormat format, std::string process, bool journal)
      : format_(format), process_(std::move(process)), journal_(journal) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string line = format_log_line(format_, process_, msg.level, msg.time,
                                             std::string_view(msg.payload.data(), msg.payload.size()), journal_);
    dest.append(line.data(), line.data() + line.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(format_, process_, journal_);
  }

 private:
  LogFormat format_;
  std::string process_;
  bool journal_;
};

}  // namespace

std::optional<LogFormat> parse_log_format(std::string_view s) {
  if (s == "text") return LogFormat::text;
  if (s == "json") return LogFormat::json;
  return std::nullopt;
}

std::string format_log_line(LogFormat format, std::string_view process, spdlog::level::level_enum level,
                            std::chrono::system_clock::time_point at, std::string_view message, bool journal_priority) {
  std::string out;
  if (journal_priority) out = "<" + std::to_string(syslog_priority(level)) + ">";
  const auto lvl = spdlog::level::to_string_view(level);
  if (format == LogFormat::json) {
    out += "{\"ts\":\"" + utc_timestamp(at) + "\",\"level\":" + quoted(std::string_view(lvl.data(), lvl.size())) +
           ",\"process\":" + quoted(process) + json_members(message) + "}";
    return out;
  }
  out += "ts=" + utc_timestamp(at) + " level=" + std::string(lvl.data(), lvl.size()) + " process=";
  out += is_key(process) ? std::string(process) : quoted(process);
  // The event as a key of its own; the fields as they were written.
  const std::size_t space = message.find(' '), eq = message.find('=');
  if (!message.empty() && message[0] != '(' &&
      (eq == std::string_view::npos || (space != std::string_view::npos && space < eq)))
    out += " event=";
  else
    out += " ";
  out += std::string(message);
  return out;
}

void init_logging(const std::string& process_name, const std::string& level, LogFormat format) {
  auto logger = spdlog::stderr_logger_mt(process_name);
  const char* journal = std::getenv("JOURNAL_STREAM");
  logger->set_formatter(std::make_unique<LineFormatter>(format, process_name, journal && *journal));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace baton
