#include "baton/worker_core/sql_variables.h"

#include <algorithm>

namespace baton::worker_core {

namespace {

bool ident_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

std::string doubled(const std::string& value, char quote, bool backslashes = false) {
  std::string out(1, quote);
  for (char c : value) {
    if (c == quote || (backslashes && c == '\\')) out += c;
    out += c;
  }
  return out + quote;
}

}  // namespace

std::string sql_literal(const std::string& value) { return doubled(value, '\''); }
std::string sql_identifier(const std::string& value) { return doubled(value, '"'); }

std::variant<std::string, SqlVariableError> interpolate_sql_variables(const std::string& sql,
                                                                      const Parameters& params) {
  std::string out;
  out.reserve(sql.size());
  const std::size_t n = sql.size();
  std::size_t i = 0;
  // Copies sql[i, end) and moves on.
  auto copy_to = [&](std::size_t end) {
    out.append(sql, i, end - i);
    i = end;
  };
  while (i < n) {
    const char c = sql[i];
    if (c == '-' && i + 1 < n && sql[i + 1] == '-') {  // -- comment, to the end of the line
      const std::size_t eol = sql.find('\n', i);
      copy_to(eol == std::string::npos ? n : eol);
    } else if (c == '/' && i + 1 < n && sql[i + 1] == '*') {  // /* comment */, nested
      std::size_t j = i + 2;
      for (int depth = 1; j < n && depth > 0;) {
        if (sql.compare(j, 2, "/*") == 0) {
          ++depth;
          j += 2;
        } else if (sql.compare(j, 2, "*/") == 0) {
          --depth;
          j += 2;
        } else {
          ++j;
        }
      }
      copy_to(j);
    } else if (c == '\'') {  // '...', or E'...' with backslash escapes
      const bool escapes = i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') && (i < 2 || !ident_char(sql[i - 2]));
      std::size_t j = i + 1;
      while (j < n) {
        if (escapes && sql[j] == '\\') {
          j += 2;
        } else if (sql[j] == '\'') {
          if (j + 1 < n && sql[j + 1] == '\'') {
            j += 2;
          } else {
            ++j;
            break;
          }
        } else {
          ++j;
        }
      }
      copy_to(std::min(j, n));
    } else if (c == '"') {  // "identifier"
      std::size_t j = i + 1;
      while (j < n) {
        if (sql[j] == '"' && j + 1 < n && sql[j + 1] == '"') {
          j += 2;
        } else if (sql[j] == '"') {
          ++j;
          break;
        } else {
          ++j;
        }
      }
      copy_to(std::min(j, n));
    } else if (c == '$' && (i == 0 || !ident_char(sql[i - 1]))) {  // $tag$ ... $tag$
      std::size_t j = i + 1;
      while (j < n && ident_char(sql[j]) && !(j == i + 1 && sql[j] >= '0' && sql[j] <= '9')) ++j;
      if (j < n && sql[j] == '$') {
        const std::string tag = sql.substr(i, j - i + 1);
        const std::size_t close = sql.find(tag, j + 1);
        copy_to(close == std::string::npos ? n : close + tag.size());
      } else {
        copy_to(i + 1);  // $1, a lone $
      }
    } else if (c == ':' && i + 1 < n && sql[i + 1] == ':') {  // a cast
      copy_to(i + 2);
    } else if (c == ':' && i + 1 < n && (sql[i + 1] == '\'' || sql[i + 1] == '"')) {
      const char quote = sql[i + 1];
      const std::size_t close = sql.find(quote, i + 2);
      const std::string name = close == std::string::npos ? "" : sql.substr(i + 2, close - i - 2);
      if (!is_psql_variable_name(name)) {
        copy_to(i + 1);  // not a variable reference (":'" inside something else)
        continue;
      }
      auto p = params.find(name);
      if (p == params.end())
        return SqlVariableError{std::string(":") + quote + name + quote + " at offset " + std::to_string(i) +
                                " names a parameter the run does not have"};
      // E:'x' makes an escape string (E'...'), in which a backslash escapes
      // what follows: doubled too, the value stays the value (security
      // review L7).
      const bool escapes = i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') && (i < 2 || !ident_char(sql[i - 2]));
      out += quote == '\'' ? doubled(p->second, '\'', escapes) : sql_identifier(p->second);
      i = close + 1;
    } else if (c == ':' && i + 1 < n && ident_start(sql[i + 1])) {
      std::size_t j = i + 1;
      while (j < n && ident_char(sql[j])) ++j;
      const std::string name = sql.substr(i + 1, j - i - 1);
      if (params.count(name))
        return SqlVariableError{":" + name + " at offset " + std::to_string(i) + " would splice the raw value into " +
                                "the SQL: write :'" + name + "' (a quoted literal) or :\"" + name +
                                "\" (an identifier)"};
      copy_to(j);
    } else {
      copy_to(i + 1);
    }
  }
  return out;
}

}  // namespace baton::worker_core
