#pragma once
// Who is calling the admin API, and what they may do. A request carries
// `Authorization: Bearer TOKEN`; a token is either the node's configured
// admin token (the bootstrap credential, principal "config") or one created
// through /api/v1/tokens, of which the database keeps only the SHA-256.
// Lookups are cached for `cache_for` (a revoked token stops working within
// that time on every node).
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "baton/base/clock.h"
#include "baton/base/lru_cache.h"
#include "baton/base/result.h"
#include "baton/store/admin_store.h"
#include "baton/tls/token_digest.h"

namespace baton::admin {

/// Each role includes the ones before it. `anyone`: no API token is asked
/// for; the route authenticates its caller itself (a worker's enrollment,
/// with its bootstrap token). No token has this role.
enum class Role { anyone = 0, read = 1, operate = 2, admin = 3 };
const char* to_string(Role r);
std::optional<Role> parse_role(const std::string& s);

struct Principal {
  std::string name;  ///< recorded as the actor in audit_log
  Role role = Role::read;
};

// The tokens' shape and digest (tls/token_digest.h), by the names the
// API's code has always used.
using tls::constant_time_equal;
using tls::issued_token_shaped;
using tls::new_api_token;
using tls::sha256_hex;
/// The credentials of an `Authorization` header of the Bearer scheme, its
/// name in any case and followed by one or more spaces (RFC 7235: a
/// scheme's name is case-insensitive); "" for any other header.
std::string bearer_credentials(const std::string& authorization);

/// Why a request was not authenticated (`baton_auth_failures_total{reason}`).
enum class AuthFailure {
  missing,    ///< no `Authorization: Bearer` header, or an empty or overlong token
  malformed,  ///< neither the configured token nor of the issued shape: no lookup made
  unknown,    ///< looked up: never issued, or revoked
};
const char* to_string(AuthFailure f);

class Authenticator {
 public:
  using Lookup = std::function<Result<std::optional<store::TokenGrant>>(const std::string& sha256_hex)>;
  using OnFailure = std::function<void(AuthFailure)>;
  Authenticator(std::string config_admin_token, Lookup lookup, const Clock& clock, Millis cache_for = Millis{5000},
                OnFailure on_failure = {});

  /// The caller behind an Authorization header value; nullopt when there is
  /// no bearer token or it is unknown or revoked; an error when the database
  /// cannot be asked.
  Result<std::optional<Principal>> authenticate(const std::string& authorization);
  /// Replaces the configured admin token (its file changed); "" = none.
  void set_config_admin_token(std::string token);

 private:
  std::optional<Principal> refuse(AuthFailure why) const;

  std::mutex config_mutex_;
  std::string config_admin_token_;  ///< guarded by config_mutex_ (replaced when its file changes)
  Lookup lookup_;
  const Clock& clock_;
  Millis cache_for_;
  OnFailure on_failure_;
  std::mutex mutex_;
  LruCache<std::optional<Principal>> cache_;  ///< by token hash; unknown tokens too
};

}  // namespace baton::admin
