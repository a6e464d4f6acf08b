// Named contexts in ctl's config file (docs/ctl.md, "Contexts"), as
// kubectl has them: `config get-contexts`, `config current-context`,
// `config use-context NAME`. Choosing one rewrites only the
// `current_context:` line of the file, so its comments and layout stay.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>

#include "baton/ctl/ctl.h"
#include "ctl_verbs.h"

namespace baton::ctl {

int config_get_contexts(Call& c) {
  if (c.contexts.empty())
    return c.error(exit_not_found, (c.config_path.empty() ? std::string("no config file") : c.config_path) +
                                       ": no contexts (a `contexts:` mapping of names to addr, token_file, ca_file, "
                                       "...: docs/ctl.md)");
  if (c.json_output()) {
    std::string out = "{\"current_context\":" + (c.context.empty() ? std::string("null") : "\"" + c.context + "\"") +
                      ",\"contexts\":[";
    for (std::size_t i = 0; i < c.contexts.size(); ++i) out += (i ? ",\"" : "\"") + c.contexts[i] + "\"";
    c.out << out << "]}\n";
    return exit_ok;
  }
  for (const auto& n : c.contexts) c.out << (n == c.context ? "* " : "  ") << n << '\n';
  return exit_ok;
}

int config_current_context(Call& c) {
  if (c.context.empty()) return c.error(exit_not_found, "no current context (`baton ctl config use-context NAME`)");
  c.out << c.context << '\n';
  return exit_ok;
}

int config_use_context(Call& c) {
  const std::string& want = c.args.at(0);
  if (std::find(c.contexts.begin(), c.contexts.end(), want) == c.contexts.end()) {
    std::string known;
    for (const auto& n : c.contexts) known += (known.empty() ? "" : ", ") + n;
    return c.error(exit_not_found, (c.config_path.empty() ? std::string("no config file") : c.config_path) +
                                       ": no context '" + want + "' (contexts: " + (known.empty() ? "none" : known) +
                                       ")");
  }
  std::ifstream in(c.config_path);
  std::ostringstream text;
  bool replaced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("current_context:", 0) == 0) {
      line = "current_context: " + want;
      replaced = true;
    }
    text << line << '\n';
  }
  if (!replaced) text << "current_context: " << want << '\n';
  // Written beside and renamed over it: a crash leaves the old file or the
  // new one, never half of one.
  // The file may hold a token: the new one keeps its mode (0600 stays 0600).
  const std::string tmp = c.config_path + ".tmp";
  struct stat st {};
  const mode_t mode = ::stat(c.config_path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0600;
  {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return c.error(exit_refused, "cannot write " + tmp);
    ::close(fd);
    ::chmod(tmp.c_str(), mode);
    std::ofstream out(tmp, std::ios::trunc);
    out << text.str();
    if (!out.flush()) return c.error(exit_refused, "cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), c.config_path.c_str()) != 0)
    return c.error(exit_refused, "cannot replace " + c.config_path);
  c.out << "current context: " << want << '\n';
  return exit_ok;
}

}  // namespace baton::ctl
