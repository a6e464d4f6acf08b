#pragma once
// Internal to ctl: one invocation of a verb, and the verbs that live in
// files of their own.
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baton/ctl/api_client.h"

namespace baton::ctl {

struct Call {
  Call(ApiClient a, std::ostream& o, std::ostream& e) : api(std::move(a)), out(o), err(e) {}
  ApiClient api;
  std::ostream& out;
  std::ostream& err;
  std::string verb;                          ///< "runs list"
  std::vector<std::string> args;             ///< positional arguments
  std::map<std::string, std::string> flags;  ///< "--job" -> value ("true" for switches; repeated: joined by \n)
  std::string output = "table";
  /// `out` is a terminal: what a task printed is made harmless to it
  /// (terminal_safe) before it is shown.
  bool terminal = false;

  bool json_output() const { return output == "json"; }
  bool has(const std::string& name) const { return flags.count(name) > 0; }
  std::optional<std::string> flag(const std::string& name) const;
  /// Prints the API's error and returns its exit code (ctl.h).
  int fail(const ApiReply& r);
  int error(int code, const std::string& message);
  int usage(const std::string& message);
};

int runs_list(Call& c);
/// `baton ctl apply -f PATH [--prune] [--dry-run]` (apply.cpp).
int apply(Call& c);

}  // namespace baton::ctl
