#include "baton/base/shell_script.h"

#include <array>
#include <string_view>

namespace baton {

namespace {
bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_shell(std::string_view name) {
  static constexpr std::array<std::string_view, 7> shells = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"};
  for (auto s : shells)
    if (name == s) return true;
  return false;
}
}  // namespace

std::string parameter_env_name(const std::string& name) {
  std::string out = "BATON_PARAM_";
  for (char c : name) out += is_alnum(c) ? static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c) : '_';
  return out;
}

std::optional<std::size_t> shell_script_index(const std::vector<std::string>& argv) {
  // The first argument that names a shell, wherever it stands: first, or
  // after env, busybox or any wrapper (sudo, nice, timeout 10 ...). Looking
  // past the first argument errs on the side of refusing a substitution.
  std::size_t i = 0;
  for (; i < argv.size() && !is_shell(base_name(argv[i])); ++i) {
    // su and runuser run the COMMAND of -c through the user's shell.
    const std::string_view b = base_name(argv[i]);
    if (b != "su" && b != "runuser") continue;
    for (std::size_t k = i + 1; k + 1 < argv.size(); ++k)
      if (argv[k] == "-c" || argv[k] == "--command") return k + 1;
    return std::nullopt;
  }
  if (i >= argv.size()) return std::nullopt;
  bool script = false;
  for (++i; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--" || a == "-") {
      ++i;
      break;
    }
    if (a.size() < 2 || (a[0] != '-' && a[0] != '+')) break;  // the first operand
    if (a == "-o" || a == "+o" || a == "-O" || a == "+O") {
      ++i;  // the option's name
      continue;
    }
    if (a[0] == '-' && a[1] != '-' && a.find('c') != std::string::npos) script = true;
  }
  if (!script || i >= argv.size()) return std::nullopt;
  return i;
}

std::variant<std::string, ShellScriptError> quote_parameters_in_shell_script(const std::string& script) {
  static const std::string open = "{{param.";
  enum class Quote { none, single, dbl } q = Quote::none;
  std::string out;
  out.reserve(script.size());
  for (std::size_t i = 0; i < script.size();) {
    if (script.compare(i, open.size(), open) == 0) {
      const std::size_t close = script.find("}}", i + open.size());
      if (close == std::string::npos)
        return ShellScriptError{"unterminated \"{{param.\" at offset " + std::to_string(i) + " (write {{param.NAME}})"};
      const std::string name = script.substr(i + open.size(), close - i - open.size());
      if (q == Quote::single)
        return ShellScriptError{"{{param." + name + "}} at offset " + std::to_string(i) +
                                " is inside single quotes, where the shell expands nothing: move it outside them"};
      // The message after '?' is the shell's own error when the run has no
      // such parameter; it names the parameter, not its value.
      std::string expansion = "${" + parameter_env_name(name) + "?names a parameter the run does not have}";
      out += q == Quote::dbl ? expansion : "\"" + expansion + "\"";
      i = close + 2;
      continue;
    }
    const char c = script[i];
    if (q != Quote::single && c == '\\' && i + 1 < script.size()) {
      out += script.substr(i, 2);  // an escaped character is no quote
      i += 2;
      continue;
    }
    if (c == '\'' && q != Quote::dbl) q = q == Quote::single ? Quote::none : Quote::single;
    if (c == '"' && q != Quote::single) q = q == Quote::dbl ? Quote::none : Quote::dbl;
    out += c;
    ++i;
  }
  return out;
}

}  // namespace baton
