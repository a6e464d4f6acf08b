#pragma once
// Durations as operators write them in YAML: "500ms", "3s", "2m", "1h".
#include <optional>
#include <string>
#include <string_view>

#include "baton/base/clock.h"

namespace baton {

/// Parses a non-negative duration with a mandatory unit (ms, s, m, h).
/// Returns nullopt with `why` filled for anything else.
std::optional<Millis> parse_duration(std::string_view text, std::string* why = nullptr);
std::string format_duration(Millis d);

}  // namespace baton
