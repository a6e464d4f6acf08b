#pragma once
// `baton verify`: the history checker over a live database's records, from
// the command line (docs/assurance.md).
#include <string>
#include <vector>

namespace baton::verify_command {

extern const char* const usage;

/// Runs the command; the exit code: 0 no violation, 1 violations, 2 the
/// arguments or the database.
int run(const std::vector<std::string>& args);

}  // namespace baton::verify_command
