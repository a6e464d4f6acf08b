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

/// A verb for scripts, not people (`__complete`): in no help and no completion.
bool hidden(const Verb& v) { return !v.words.empty() && v.words[0].rfind("__", 0) == 0; }

/// The words that may follow each prefix of a verb ("" -> the first words,
/// "runs" -> list, show, ...), its flags after a whole verb.
std::map<std::string, std::set<std::string>> next_words(const std::vector<Verb>& verbs) {
  std::map<std::string, std::set<std::string>> next;
  for (const auto& v : verbs) {
    if (hidden(v)) continue;
    std::string prefix;
    for (const auto& w : v.words) {
      next[prefix].insert(w);
      prefix += (prefix.empty() ? "" : " ") + w;
    }
    auto& after = next[prefix];  // a whole verb: its flags (and, for some, names: named_arguments)
    for (const auto& f : v.flags) after.insert(f.name);
  }
  return next;
}

const char* const global_flags =
    "--addr --token --token-file --ca --insecure --config --context --timeout -o --no-headers --help";

/// The verbs whose argument names a job or a worker: completed with the
/// names the cluster has (`baton ctl __complete jobs|workers`), asked with
/// the same global flags as the command line being completed.
std::map<std::string, std::string> named_arguments(const std::vector<Verb>& verbs) {
  std::map<std::string, std::string> out;
  for (const auto& v : verbs) {
    if (hidden(v)) continue;
    std::string a = v.args;  // "JOB", "[RUN]", ...
    if (!a.empty() && a[0] == '[') a.erase(0, 1);
    if (a.rfind("JOB", 0) == 0) out[joined(v.words)] = "jobs";
    if (a.rfind("WORKER", 0) == 0) out[joined(v.words)] = "workers";
  }
  return out;
}

std::string words_of(const std::set<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

std::string completion_script(const std::vector<Verb>& verbs, const std::string& shell) {
  const auto next = next_words(verbs);
  const auto named = named_arguments(verbs);
  std::ostringstream s;
  if (shell == "bash") {
    // Dynamic: after --context the contexts of the config file, in a job's
    // or a worker's place the cluster's names, asked with the global flags
    // the line already has (--addr, --context, ...). A flag's value is not
    // a word of the verb.
    s << "# bash completion for `baton ctl`: source <(baton ctl completion bash)\n"
         "_baton_ctl() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i words=\"\" names=\"\"\n"
         "  local -a glob=()\n"
         "  for ((i = 2; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in\n"
         "      --addr|--token|--token-file|--ca|--config|--context|--timeout)\n"
         "        glob+=(\"${COMP_WORDS[i]}\" \"${COMP_WORDS[i+1]}\"); i=$((i + 1)) ;;\n"
         "      --insecure) glob+=(--insecure) ;;\n"
         "      -o) i=$((i + 1)) ;;\n"
         "      -*) ;;\n"
         "      *) words=\"${words:+$words }${COMP_WORDS[i]}\" ;;\n"
         "    esac\n"
         "  done\n"
         "  case \"$prev\" in\n"
         "    --context) COMPREPLY=($(compgen -W \"$(baton ctl \"${glob[@]}\" __complete contexts 2>/dev/null)\" -- "
         "\"$cur\")); return ;;\n"
         "    -o) COMPREPLY=($(compgen -W \"table wide json jsonl yaml\" -- \"$cur\")); return ;;\n"
         "  esac\n"
         "  case \"$words\" in\n";
    for (const auto& [verb, kind] : named)
      s << "    \"" << verb << "\") names=$(baton ctl \"${glob[@]}\" --timeout 2s __complete " << kind
        << " 2>/dev/null) ;;\n";
    s << "  esac\n"
         "  case \"$words\" in\n";
    for (const auto& [prefix, words] : next)
      s << "    \"" << prefix << "\") COMPREPLY=($(compgen -W \"$names " << words_of(words) << " " << global_flags
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
         "  case \"${words[CURRENT-1]}\" in\n"
         "    --context) next=(${(f)\"$(baton ctl __complete contexts 2>/dev/null)\"}) ;;\n"
         "  esac\n"
         "  case \"${(j: :)seen}\" in\n";
    for (const auto& [verb, kind] : named)
      s << "    \"" << verb << "\") next+=(${(f)\"$(baton ctl --timeout 2s __complete " << kind
        << " 2>/dev/null)\"}) ;;\n";
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
      if (auto n = named.find(prefix); n != named.end())
        s << "            baton ctl --timeout 2s __complete " << n->second << " 2>/dev/null\n";
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
  out << "usage: baton ctl [--addr HOST:PORT[,...]] [--token T | --token-file F] [--ca FILE | --insecure] [--config "
         "FILE]\n"
         "                 [-o table|json] VERB...\n\n"
         "verbs:\n";
  for (const auto& v : all) {
    if (hidden(v)) continue;
    std::string line = "  " + joined(v.words) + (v.args.empty() ? "" : " " + v.args);
    out << line << std::string(line.size() < 40 ? 40 - line.size() : 1, ' ') << v.help << '\n';
  }
  out << "\n`baton ctl VERB --help` describes a verb's flags. Exit codes: 0 done, 1 refused, 2 usage,\n"
         "3 unavailable, 4 not found, 5 conflict, 6 unauthenticated or forbidden (docs/ctl.md).\n";
  return exit_ok;
}

}  // namespace baton::ctl
