#pragma once
// A run's parameters in an SQL task's text, the way psql interpolates its
// variables -- done by the worker itself, because SQL tasks run through
// libpq in the worker, not through psql (which has a shell escape, `\!`).
// Pure: text in, text out.
//
//   :'NAME'  -> the value as a quoted literal ('it''s'): never SQL text;
//   :"NAME"  -> the value as a quoted identifier ("My Table");
//   :NAME    -> refused when NAME is a parameter: psql would splice the raw
//               value into the SQL, which is how injection happens.
//
// Nothing is replaced inside string literals ('...', E'...', $tag$...$tag$),
// quoted identifiers or comments, and `::` casts are left alone. The
// literals assume standard_conforming_strings = on (the default since
// PostgreSQL 9.1; the worker sets it on every SQL task's session).
#include <string>
#include <variant>

#include "baton/worker_core/task_parameters.h"

namespace baton::worker_core {

struct SqlVariableError {
  std::string message;  ///< names the variable and its offset
};

std::variant<std::string, SqlVariableError> interpolate_sql_variables(const std::string& sql, const Parameters& params);

/// 'value' with every ' doubled (standard_conforming_strings = on).
std::string sql_literal(const std::string& value);
/// "value" with every " doubled.
std::string sql_identifier(const std::string& value);

}  // namespace baton::worker_core
