#pragma once
// Who is calling the admin API, and what they may do. A request carries
// `Authorization: Bearer TOKEN`; a token is either the node's configured
// admin token (the bootstrap credential, principal "config") or one created
// through /api/v1/tokens, of which the database keeps only the SHA-256.
// Lookups are cached for `cache_for` (a revoked token stops working within
// that time on every node).
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "baton/core/clock.h"
#include "baton/core/result.h"
#include "baton/store/admin_store.h"

namespace baton::leader {

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

/// Lower-case hex SHA-256 of `text`.
std::string sha256_hex(const std::string& text);
/// A new token: "baton_" and 64 hex digits from the system's CSPRNG.
std::string new_api_token();

class Authenticator {
 public:
  using Lookup = std::function<Result<std::optional<store::TokenGrant>>(const std::string& sha256_hex)>;
  Authenticator(std::string config_admin_token, Lookup lookup, const Clock& clock, Millis cache_for = Millis{5000});

  /// The caller behind an Authorization header value; nullopt when there is
  /// no bearer token or it is unknown or revoked; an error when the database
  /// cannot be asked.
  Result<std::optional<Principal>> authenticate(const std::string& authorization);

 private:
  struct Cached {
    std::optional<Principal> who;
    MonoTime until;
  };
  std::string config_admin_token_;
  Lookup lookup_;
  const Clock& clock_;
  Millis cache_for_;
  std::mutex mutex_;
  std::map<std::string, Cached> cache_;  ///< by token hash; cleared when it grows past a bound
};

}  // namespace baton::leader
