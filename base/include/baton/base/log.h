#pragma once
// Logging conventions: spdlog underneath; every line is a stable event name
// followed by key=value fields (values a client or worker supplied are
// JSON-quoted), so `grep 'epoch=7'` or `grep 'run=42'` finds everything
// about an epoch or a run, and a log shipper can read the fields:
//   text: ts=2026-11-29T02:42:19.942278Z level=info process=n1 event=node_start node=n1 ...
//   json: {"ts":"2026-11-29T02:42:19.942278Z","level":"info","process":"n1","event":"node_start","node":"n1",...}
// Timestamps are UTC with their zone. Under systemd (JOURNAL_STREAM set)
// each line starts with its syslog priority (<3> error ... <7> debug), which
// journald takes as the entry's priority.
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

enum class LogFormat { text, json };

/// "text" or "json"; nullopt for anything else.
std::optional<LogFormat> parse_log_format(std::string_view s);

/// Configures the default logger: stderr, in `format`.
void init_logging(const std::string& process_name, const std::string& level, LogFormat format = LogFormat::text);

/// One line as the logger writes it (without its newline), for tests: `message`
/// is what a log call formatted ("event k=v ...").
std::string format_log_line(LogFormat format, std::string_view process, spdlog::level::level_enum level,
                            std::chrono::system_clock::time_point at, std::string_view message,
                            bool journal_priority = false);

}  // namespace baton
