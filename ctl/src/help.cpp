// `baton ctl --help` and `baton ctl completion bash`: the verb table as a
// person and a shell see it.
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "baton/ctl/ctl.h"
#include "ctl_verbs.h"

namespace baton::ctl {

std::string completion_script(const std::vector<Verb>& verbs) {
  // Words that may follow each prefix of a verb, for bash's `complete`.
  std::map<std::string, std::set<std::string>> next;
  for (const auto& v : verbs) {
    std::string prefix;
    for (const auto& w : v.words) {
      next[prefix].insert(w);
      prefix += (prefix.empty() ? "" : " ") + w;
    }
    for (const auto& f : v.flags) next[prefix].insert(f.name);
  }
  std::ostringstream s;
  s << "# bash completion for `baton ctl`: source <(baton ctl completion bash)\n"
       "_baton_ctl() {\n"
       "  local cur=${COMP_WORDS[COMP_CWORD]} i words=\"\"\n"
       "  for ((i = 2; i < COMP_CWORD; i++)); do\n"
       "    case ${COMP_WORDS[i]} in -*) ;; *) words=\"${words:+$words }${COMP_WORDS[i]}\" ;; esac\n"
       "  done\n"
       "  case \"$words\" in\n";
  for (const auto& [prefix, words] : next) {
    s << "    \"" << prefix << "\") COMPREPLY=($(compgen -W \"";
    bool first = true;
    for (const auto& w : words) s << (first ? "" : " ") << w, first = false;
    s << " --addr --token --token-file --ca --insecure --config -o --help\" -- \"$cur\")) ;;\n";
  }
  s << "  esac\n}\ncomplete -F _baton_ctl -o default baton\n";
  return s.str();
}

int print_help(std::ostream& out, const std::vector<Verb>& all) {
  out << "usage: baton ctl [--addr HOST:PORT] [--token T | --token-file F] [--ca FILE | --insecure] [--config FILE]\n"
         "                 [-o table|json] VERB...\n\n"
         "verbs:\n";
  for (const auto& v : all) {
    std::string line = "  " + joined(v.words) + (v.args.empty() ? "" : " " + v.args);
    out << line << std::string(line.size() < 40 ? 40 - line.size() : 1, ' ') << v.help << '\n';
  }
  out << "\n`baton ctl VERB --help` describes a verb's flags. Exit codes: 0 done, 1 refused, 2 usage,\n"
         "3 unavailable, 4 not found, 5 conflict, 6 unauthenticated or forbidden (docs/ctl.md).\n";
  return exit_ok;
}

}  // namespace baton::ctl
