#pragma once
// The `--flag VALUE` and `--flag=VALUE` forms of the baton commands' options.
#include <cstddef>
#include <string>
#include <vector>

namespace baton::cmd {

/// If args[i] is `flag` followed by a value, or `flag=VALUE`: the value goes
/// to `into` (i moves past a separate value) and true; false otherwise.
inline bool flag_value(const std::vector<std::string>& args, std::size_t& i, const std::string& flag,
                       std::string& into) {
  const std::string& a = args[i];
  if (a == flag && i + 1 < args.size()) {
    into = args[++i];
    return true;
  }
  if (a.rfind(flag + "=", 0) == 0) {
    into = a.substr(flag.size() + 1);
    return true;
  }
  return false;
}

}  // namespace baton::cmd
