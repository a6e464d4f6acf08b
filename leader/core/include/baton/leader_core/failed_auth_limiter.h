#pragma once
// Failed authentications per source (docs/security.md, "Failed
// authentications"). A source is one IPv4 address or one IPv6 /64 (what
// one host or one customer of a provider is usually given): grouping by /64
// keeps one attacker from getting a fresh budget per address of its
// prefix. Each source may fail `burst` times at once and `per_second` on
// average; beyond that, its requests that need a credential are refused
// before the credential is hashed or looked up, until the budget refills.
// A refusal is not a failure (it does not drain the budget further), so a
// source that stops failing is let through again at the rate.
//
// Pure (the caller passes the time) and not thread-safe (the server holds a
// lock around it). The number of sources remembered is bounded: when full,
// the one that failed least recently is forgotten, so a flood from many
// sources costs memory once, not per source.
#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "baton/base/clock.h"

namespace baton::leader_core {

struct FailedAuthLimits {
  double per_second = 2;        ///< failures a source is allowed per second, on average; <= 0: no limit
  double burst = 30;            ///< failures a source may make at once
  std::size_t sources = 10000;  ///< sources remembered
};

/// The source of a client address: an IPv4 address as it is written, an
/// IPv6 address as its /64 ("2001:db8:1:2::/64"); an IPv4-mapped IPv6
/// address as the IPv4 one. Anything that is not an address is its own
/// source.
std::string auth_source_of(const std::string& address);

class FailedAuthLimiter {
 public:
  explicit FailedAuthLimiter(FailedAuthLimits limits) : limits_(limits) {}

  /// How long `source` must wait before it may try a credential again, or
  /// nullopt when it may now.
  std::optional<Millis> refused(const std::string& source, MonoTime now);
  /// One failed authentication of `source`.
  void failed(const std::string& source, MonoTime now);

  std::size_t sources() const { return order_.size(); }

 private:
  struct Budget {
    std::string source;
    double left;
    MonoTime at;
  };
  /// The source's budget refilled to `now`, or null if it has none (it has
  /// not failed lately: a full budget).
  Budget* budget(const std::string& source, MonoTime now);

  FailedAuthLimits limits_;
  std::list<Budget> order_;  ///< most recently failed first
  std::unordered_map<std::string, std::list<Budget>::iterator> index_;
};

}  // namespace baton::leader_core
