#include "baton/leader_core/failed_auth_limiter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace baton::leader_core {

std::string auth_source_of(const std::string& address) {
  // Parsing only (inet_pton): no I/O.
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return address;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return address;
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(v6.s6_addr, mapped, sizeof mapped) == 0) {
    char text[INET_ADDRSTRLEN];
    std::memcpy(&v4, v6.s6_addr + 12, 4);
    if (inet_ntop(AF_INET, &v4, text, sizeof text)) return text;
  }
  std::memset(v6.s6_addr + 8, 0, 8);
  char text[INET6_ADDRSTRLEN];
  if (!inet_ntop(AF_INET6, &v6, text, sizeof text)) return address;
  return std::string(text) + "/64";
}

FailedAuthLimiter::Budget* FailedAuthLimiter::budget(const std::string& source, MonoTime now) {
  auto it = index_.find(source);
  if (it == index_.end()) return nullptr;
  Budget& b = *it->second;
  const double seconds = std::max(0.0, std::chrono::duration<double>(now - b.at).count());
  b.left = std::min(limits_.burst, b.left + seconds * limits_.per_second);
  b.at = now;
  return &b;
}

std::optional<Millis> FailedAuthLimiter::refused(const std::string& source, MonoTime now) {
  if (limits_.per_second <= 0) return std::nullopt;
  const Budget* b = budget(source, now);
  // (The budget is refilled a little at each call: allow for the sum's
  // rounding.)
  if (!b || b->left >= 1 - 1e-9) return std::nullopt;
  const double wait_s = (1 - b->left) / limits_.per_second;
  return Millis{std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(wait_s * 1000)))};
}

void FailedAuthLimiter::failed(const std::string& source, MonoTime now) {
  if (limits_.per_second <= 0) return;
  if (Budget* b = budget(source, now)) {
    b->left = std::max(0.0, b->left - 1);
    order_.splice(order_.begin(), order_, index_[source]);
    return;
  }
  if (order_.size() >= std::max<std::size_t>(1, limits_.sources)) {
    index_.erase(order_.back().source);
    order_.pop_back();
  }
  order_.push_front(Budget{source, std::max(0.0, limits_.burst - 1), now});
  index_[source] = order_.begin();
}

}  // namespace baton::leader_core
