#include "baton/admin/api_auth.h"

#include <stdexcept>

namespace baton::admin {

namespace {
constexpr std::size_t cache_max = 10000;  // unknown tokens are cached too: bound the map
}  // namespace

const char* to_string(Role r) {
  switch (r) {
    case Role::anyone: return "anyone";
    case Role::read: return "read";
    case Role::operate: return "operate";
    case Role::admin: return "admin";
  }
  return "read";
}

const char* to_string(AuthFailure f) {
  switch (f) {
    case AuthFailure::missing: return "missing";
    case AuthFailure::malformed: return "malformed";
    case AuthFailure::unknown: return "unknown";
  }
  return "unknown";
}

std::string bearer_credentials(const std::string& authorization) {
  static constexpr char scheme[] = "bearer";
  if (authorization.size() <= 6) return "";
  for (std::size_t i = 0; i < 6; ++i) {
    const char c = authorization[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != scheme[i]) return "";
  }
  std::size_t at = 6;
  if (authorization[at] != ' ') return "";
  while (at < authorization.size() && authorization[at] == ' ') ++at;
  return authorization.substr(at);
}

std::optional<Role> parse_role(const std::string& s) {
  if (s == "read") return Role::read;
  if (s == "operate") return Role::operate;
  if (s == "admin") return Role::admin;
  return std::nullopt;
}

Authenticator::Authenticator(std::string config_admin_token, Lookup lookup, const Clock& clock, Millis cache_for,
                             OnFailure on_failure)
    : config_admin_token_(std::move(config_admin_token)),
      lookup_(std::move(lookup)),
      clock_(clock),
      cache_for_(cache_for),
      on_failure_(std::move(on_failure)),
      cache_(cache_max) {}

void Authenticator::set_config_admin_token(std::string token) {
  std::lock_guard lock(config_mutex_);
  config_admin_token_ = std::move(token);
}

std::optional<Principal> Authenticator::refuse(AuthFailure why) const {
  if (on_failure_) on_failure_(why);
  return std::nullopt;
}

Result<std::optional<Principal>> Authenticator::authenticate(const std::string& authorization) {
  const std::string token = bearer_credentials(authorization);
  if (token.empty() || token.size() > 200) return refuse(AuthFailure::missing);
  {
    std::lock_guard lock(config_mutex_);
    if (!config_admin_token_.empty() && constant_time_equal(token, config_admin_token_))
      return std::optional<Principal>{Principal{"config", Role::admin}};
  }
  // Not the configured token and not of the shape every issued token has:
  // never issued, so no hash and no database lookup (a flood of made-up
  // tokens costs the database nothing; docs/security.md).
  if (!issued_token_shaped(token)) return refuse(AuthFailure::malformed);
  // Only the hash is kept, here as in the database: the cache holds no token.
  const std::string hash = sha256_hex(token);
  const auto now = clock_.mono();
  {
    std::lock_guard lock(mutex_);
    if (auto cached = cache_.find(hash, now)) return *cached ? std::move(*cached) : refuse(AuthFailure::unknown);
  }
  auto grant = lookup_(hash);
  if (!grant) return grant.error();
  std::optional<Principal> who;
  if (*grant)
    if (auto role = parse_role((*grant)->role)) who = Principal{(*grant)->name, *role};
  {
    std::lock_guard lock(mutex_);
    cache_.put(hash, who, now + cache_for_);
  }
  return who ? who : refuse(AuthFailure::unknown);
}

}  // namespace baton::admin
