#pragma once
// Logging conventions: spdlog underneath; every line starts with a stable
// event name followed by key=value fields, so `grep 'epoch=7'` or
// `grep 'run=42'` finds everything about an epoch or a run.
#include <spdlog/spdlog.h>

#include <string>

namespace baton {
/// Configures the default logger: stderr, "[time] [level] [node] message".
void init_logging(const std::string& process_name, const std::string& level);
}  // namespace baton
