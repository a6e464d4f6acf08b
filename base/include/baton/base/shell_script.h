#pragma once
// A run's parameters and a shell (docs/security.md, "Parameters and
// shells"). A PROGRAM task's command is an argv, run without a shell, so a
// substituted value is one argument. A command that starts a shell with a
// script (`sh -c SCRIPT`) hands that script to a parser: a value
// substituted into it could run commands. A job file that does that is
// refused unless its task asks for `shell_quote: true`, and then every
// {{param.NAME}} in the script becomes the parameter's environment
// variable, expanded in quotes: the shell reads the value as data, never
// as script. Pure: text in, text out.
#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace baton {

/// "BATON_PARAM_" + NAME upper-cased, every character but a letter or a
/// digit as '_': the environment variable a task receives a parameter in.
std::string parameter_env_name(const std::string& name);

/// The index of the script argument when `argv` starts a shell with one:
/// the first argument named `sh`, `bash`, `dash`, `zsh`, `ksh`, `mksh` or
/// `ash` (by base name, wherever it stands: after `env`, `busybox`, `sudo`,
/// `timeout 10` ...), given an option cluster containing `c` (`-c`, `-ec`,
/// `-xc` ...); the script is the first argument after the options (`-o
/// NAME` takes one). For `su` and `runuser`, the argument after `-c` or
/// `--command`. Other interpreters (`python -c`, `perl -e`, `ssh HOST
/// CMD`, `env -S`) are not recognised.
std::optional<std::size_t> shell_script_index(const std::vector<std::string>& argv);

/// `script` with every {{param.NAME}} replaced by "${BATON_PARAM_NAME?...}"
/// (quoted where the script is not already inside double quotes, where it
/// is written without its own quotes); an unset variable stops the script
/// with a message naming the parameter, as a missing parameter fails a task.
/// Inside single quotes the shell expands nothing: refused, as is an
/// unterminated "{{param.".
struct ShellScriptError {
  std::string message;
};
std::variant<std::string, ShellScriptError> quote_parameters_in_shell_script(const std::string& script);

}  // namespace baton
