#include "baton/base/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <utility>
#include <vector>

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

/// A message as the code writes it: "event k=v k2=\"x y\" (free text)".
struct MessageParts {
  std::string_view event;
  std::vector<std::pair<std::string_view, std::string_view>> fields;  ///< key, value as written
  std::string_view text;                                              ///< the free text, without its parentheses
};

MessageParts parse_message(std::string_view m) {
  MessageParts out;
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
      out.event = m.substr(i, space == std::string_view::npos ? m.size() - i : space - i);
      first = false;
      i = space == std::string_view::npos ? m.size() : space;
      continue;
    }
    first = false;
    if (!field) {
      out.text = m.substr(i);
      break;
    }
    const std::size_t v = eq + 1;
    std::size_t end;
    if (v >= m.size() || m[v] != '"' || (end = literal_end(m, v)) == std::string_view::npos) {
      end = m.find(' ', v);
      if (end == std::string_view::npos) end = m.size();
    }
    out.fields.emplace_back(m.substr(i, eq - i), m.substr(v, end - v));
    i = end;
  }
  while (!out.text.empty() && out.text.back() == ' ') out.text.remove_suffix(1);
  if (out.text.size() >= 2 && out.text.front() == '(' && out.text.back() == ')')
    out.text = out.text.substr(1, out.text.size() - 2);
  return out;
}

/// The message as JSON members: "event":..., "k":... (numbers and booleans
/// typed; a quoted value is already a JSON string, json_quote), and "msg":
/// the free text, or the event's name when there is none (every line has a
/// msg, as slog's and zap's do).
std::string json_members(std::string_view m) {
  const MessageParts p = parse_message(m);
  std::string out;
  if (!p.event.empty()) out += ",\"event\":" + quoted(p.event);
  for (const auto& [key, value] : p.fields)
    out += "," + quoted(key) + ":" + (literal_end(value, 0) == value.size() ? std::string(value) : json_value(value));
  if (!p.text.empty())
    out += ",\"msg\":" + quoted(p.text);
  else if (!p.event.empty())
    out += ",\"msg\":" + quoted(p.event);
  return out;
}

/// The message as strict logfmt: event=E, the fields as written, and the
/// free text as msg="..." (a parser of logfmt reads every word as a key).
std::string logfmt_members(std::string_view m) {
  const MessageParts p = parse_message(m);
  std::string out;
  if (!p.event.empty()) out += " event=" + std::string(p.event);
  for (const auto& [key, value] : p.fields) out += " " + std::string(key) + "=" + std::string(value);
  if (!p.text.empty()) out += " msg=" + quoted(p.text);
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
  return out + logfmt_members(message);
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
