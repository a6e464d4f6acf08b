// Failed authentications per source, server-wide (NodeServer's own).
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "baton/base/clock.h"
#include "baton/base/json_text.h"
#include "baton/leader/node_server.h"
#include "baton/leader_core/failed_auth_limiter.h"

namespace baton::leader::serving {

/// Failed authentications per source, server-wide (leader_core::
/// FailedAuthLimiter behind a lock): asked before a credential is looked
/// at, told of every credential refused. Refusals are counted and logged at
/// most once a second, with how many came since the last line.
class AuthGate {
 public:
  AuthGate(const ServerLimits& l, ServerHandlers& h)
      : limiter_({.per_second = l.auth_failure_rate, .burst = l.auth_failure_burst}), handlers_(h) {}
  /// A gate of another budget, for requests that are counted whether or not
  /// they fail (GET /readyz: answered without a credential). Its refusals
  /// are logged as `event`, and not counted as failed authentications.
  AuthGate(double per_second, double burst, ServerHandlers& h, const char* event)
      : limiter_({.per_second = per_second, .burst = burst}), handlers_(h), event_(event) {}

  /// How long the client at `address` must wait, or nullopt: go on.
  std::optional<Millis> refused(const std::string& address) {
    const std::string source = leader_core::auth_source_of(address);
    const MonoTime now = clock_.mono();
    std::optional<Millis> wait;
    {
      std::lock_guard lock(mutex_);
      wait = limiter_.refused(source, now);
      if (!wait) return wait;
      ++unlogged_;
      if (!logged_ || now - *logged_ >= std::chrono::seconds(1)) {
        spdlog::warn("{} source={} retry_after_ms={} count={} (since the last such line)", event_, json_quote(source),
                     wait->count(), unlogged_);
        logged_ = now;
        unlogged_ = 0;
      }
    }
    if (event_ == std::string_view("auth_throttled")) handlers_.on_auth_throttled();
    return wait;
  }
  void failed(const std::string& address) {
    const std::string source = leader_core::auth_source_of(address);
    std::lock_guard lock(mutex_);
    limiter_.failed(source, clock_.mono());
  }

 private:
  RealClock clock_;
  std::mutex mutex_;
  leader_core::FailedAuthLimiter limiter_;
  ServerHandlers& handlers_;
  std::optional<MonoTime> logged_;
  std::int64_t unlogged_ = 0;
  const char* event_ = "auth_throttled";
};

}  // namespace baton::leader::serving
