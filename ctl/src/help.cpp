// `baton ctl --help` and `baton ctl completion bash|zsh|fish`: the verb
// table as a person and a shell see it.
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "baton/ctl/ctl.h"
#include "ctl_verbs.h"

namespace baton::ctl {

namespace {

/// The words that may follow each prefix of a verb ("" -> the first words,
/// "runs" -> list, show, ...), its flags after a whole verb.
std::map<std::string, std::set<std::string>> next_words(const std::vector<Verb>& verbs) {
  std::map<std::string, std::set<std::string>> next;
  for (const auto& v : verbs) {
    std::string prefix;
    for (const auto& w : v.words) {
      next[prefix].insert(w);
      prefix += (prefix.empty() ? "" : " ") + w;
    }
    for (const auto& f : v.flags) next[prefix].insert(f.name);
  }
  return next;
}

const char* const global_flags = "--addr --token --token-file --ca --insecure --config -o --no-headers --help";

std::string words_of(const std::set<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

std::string completion_script(const std::vector<Verb>& verbs, const std::string& shell) {
  const auto next = next_words(verbs);
  std::ostringstream s;
  if (shell == "bash") {
    s << "# bash completion for `baton ctl`: source <(baton ctl completion bash)\n"
         "_baton_ctl() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} i words=\"\"\n"
         "  for ((i = 2; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in -*) ;; *) words=\"${words:+$words }${COMP_WORDS[i]}\" ;; esac\n"
         "  done\n"
         "  case \"$words\" in\n";
    for (const auto& [prefix, words] : next)
      s << "    \"" << prefix << "\") COMPREPLY=($(compgen -W \"" << words_of(words) << " " << global_flags
        << "\" -- \"$cur\")) ;;\n";
    s << "  esac\n}\ncomplete -F _baton_ctl -o default baton\n";
  } else if (shell == "zsh") {
    // zsh: `words` is 1-based (baton ctl VERB...), CURRENT the word under
    // the cursor.
    s << "#compdef baton\n"
         "# zsh completion for `baton ctl`: source <(baton ctl completion zsh) (after compinit)\n"
         "_baton_ctl() {\n"
         "  local -a seen next\n"
         "  local i\n"
         "  for ((i = 3; i < CURRENT; i++)); do\n"
         "    [[ ${words[i]} == -* ]] || seen+=(${words[i]})\n"
         "  done\n"
         "  case \"${(j: :)seen}\" in\n";
    for (const auto& [prefix, words] : next)
      s << "    \"" << prefix << "\") next=(" << words_of(words) << " " << global_flags << ") ;;\n";
    s << "  esac\n"
         "  compadd -- $next\n"
         "  _files\n"
         "}\n"
         "(( $+functions[compdef] )) && compdef _baton_ctl baton\n";
  } else {  // fish
    s << "# fish completion for `baton ctl`: baton ctl completion fish | source\n"
         "function __baton_ctl_next\n"
         "    set -l tokens (commandline -opc)\n"
         "    set -l seen\n"
         "    for t in $tokens[3..-1]\n"
         "        string match -q -- '-*' $t; or set -a seen $t\n"
         "    end\n"
         "    switch \"$seen\"\n";
    for (const auto& [prefix, words] : next) {
      s << "        case '" << prefix << "'\n";
      for (const auto& w : words) s << "            echo " << w << "\n";
    }
    s << "    end\n"
         "    for f in "
      << global_flags
      << "\n"
         "        echo $f\n"
         "    end\n"
         "end\n"
         "complete -c baton -n '__fish_seen_subcommand_from ctl' -a '(__baton_ctl_next)'\n";
  }
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
