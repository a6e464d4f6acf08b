#pragma once
// Internal to store/pg: PostgreSQL array literals for batched statements
// (`unnest($n::type[])`), so a batch is one parameter per column whatever its
// length. Strings are quoted and escaped; NUL bytes, which PostgreSQL text
// cannot hold, are dropped rather than failing the whole batch.
#include <cstdint>
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

/// The per-attempt columns of a batched statement (run id, expected
/// version, worker, attempt, lease token), one array parameter each.
struct AttemptArrays {
  std::vector<std::int64_t> ids, versions;
  std::vector<std::string> workers, tokens;
  std::vector<int> attempts;

  void add(std::int64_t id, std::int64_t version, const std::string& worker, int attempt, const std::string& token) {
    ids.push_back(id);
    versions.push_back(version);
    workers.push_back(worker);
    attempts.push_back(attempt);
    tokens.push_back(token);
  }
};

}  // namespace baton::store::pg
