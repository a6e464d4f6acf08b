#pragma once
// Strong identifier types so an epoch is never passed where a version is due.
#include <compare>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace baton {

/// Whether `s` is made only of the characters node and worker ids may hold:
/// ASCII letters, digits, '-', '_' and '.' (nothing a log line, a path, a
/// URL or a shell would read as anything else). Its length is the caller's
/// rule.
constexpr bool id_alphabet(std::string_view s) {
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
          c == '.'))
      return false;
  return true;
}

template <class Tag, class Rep>
struct StrongId {
  Rep value{};
  friend auto operator<=>(const StrongId&, const StrongId&) = default;
  friend std::ostream& operator<<(std::ostream& os, const StrongId& id) { return os << id.value; }
};

struct EpochTag {};
struct RunIdTag {};
struct VersionTag {};

/// Raft-style term of the leader lease. Only ever increases.
using Epoch = StrongId<EpochTag, std::int64_t>;
using RunId = StrongId<RunIdTag, std::int64_t>;
/// Optimistic-concurrency version of a row; every write sets version + 1.
using Version = StrongId<VersionTag, std::int64_t>;

/// Who a coordinator process is: the configured name plus a fresh id per
/// process start, so two processes with one name never share leadership and a
/// restart never inherits the previous process's lease.
struct NodeIdentity {
  std::string node_id;
  std::string incarnation;
  std::string endpoint;
  friend bool operator==(const NodeIdentity&, const NodeIdentity&) = default;
};

}  // namespace baton
