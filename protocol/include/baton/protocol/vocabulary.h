#pragma once
// The protocol's words for its enums (messages.h): the strings the wire and
// the job files use, mapped in one place so that code compares enums.
#include <optional>
#include <string_view>

#include "baton/protocol/messages.h"

namespace baton::protocol {

const char* to_string(Outcome o);
const char* to_string(Builtin b);
/// Exact, case-sensitive: "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELED".
std::optional<Outcome> parse_outcome(std::string_view s);
/// Exact, case-sensitive: "NOOP", "SLEEP", "LOG", "FAIL".
std::optional<Builtin> parse_builtin(std::string_view s);

}  // namespace baton::protocol
