#pragma once
// How a task receives its run's parameters (docs/scheduling.md,
// "Parameters"). Pure: text in, text out.
//
//   - every parameter is an environment variable BATON_PARAM_<NAME>, the
//     name upper-cased with anything but letters and digits as '_';
//   - "{{param.NAME}}" in a PROGRAM argument, an env value or a BUILTIN
//     argument is replaced by the value. There is no shell: a value is one
//     argument (or part of one), never parsed as a command;
//   - an SQL task gets every parameter whose name is an identifier as a psql
//     variable (`psql -v NAME=value`); the SQL refers to it as :'NAME', which
//     psql sends as a quoted literal, never spliced as SQL text.
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "baton/base/shell_script.h"

namespace baton::worker_core {

using Parameters = std::map<std::string, std::string>;

/// "BATON_PARAM_" + NAME upper-cased, other characters as '_' (core: the
/// leader writes the same names into a shell script, shell_script.h).
using baton::parameter_env_name;

/// `text` with every {{param.NAME}} replaced; on an unknown name or an
/// unterminated "{{param.", an error that names it.
struct SubstitutionError {
  std::string message;
};
std::variant<std::string, SubstitutionError> substitute_parameters(const std::string& text, const Parameters& params);

/// True when `name` can be a psql variable: a letter or '_', then letters,
/// digits or '_'.
bool is_psql_variable_name(const std::string& name);

}  // namespace baton::worker_core
