#pragma once
// Internal to store/pg: PostgreSQL array literals for batched statements
// (`unnest($n::type[])`), so a batch is one parameter per column whatever its
// length. Strings are quoted and escaped; NUL bytes, which PostgreSQL text
// cannot hold, are dropped rather than failing the whole batch.
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace baton::store::pg {

namespace detail {
inline void append_array_element(std::string& out, const std::string& v) {
  out += '"';
  for (char c : v) {
    if (c == '\0') continue;
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}
template <class T>
void append_array_element(std::string& out, const T& v) {
  out += std::to_string(v);
}
template <class T>
void append_array_element(std::string& out, const std::optional<T>& v) {
  if (!v)
    out += "NULL";
  else
    append_array_element(out, *v);
}
}  // namespace detail

template <class T>
std::string pg_array(const std::vector<T>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    detail::append_array_element(out, values[i]);
  }
  return out + "}";
}

}  // namespace baton::store::pg
