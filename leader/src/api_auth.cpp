#include "baton/leader/api_auth.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

#include "baton/leader/node_server.h"

namespace baton::leader {

namespace {
constexpr std::size_t cache_max = 10000;  // unknown tokens are cached too: bound the map

std::string hex(const unsigned char* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}
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

std::optional<Role> parse_role(const std::string& s) {
  if (s == "read") return Role::read;
  if (s == "operate") return Role::operate;
  if (s == "admin") return Role::admin;
  return std::nullopt;
}

std::string sha256_hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  return hex(digest, len);
}

std::string new_api_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes (OpenSSL RAND_bytes)");
  return "baton_" + hex(bytes, sizeof bytes);
}

Authenticator::Authenticator(std::string config_admin_token, Lookup lookup, const Clock& clock, Millis cache_for)
    : config_admin_token_(std::move(config_admin_token)),
      lookup_(std::move(lookup)),
      clock_(clock),
      cache_for_(cache_for) {}

Result<std::optional<Principal>> Authenticator::authenticate(const std::string& authorization) {
  if (authorization.rfind("Bearer ", 0) != 0) return std::optional<Principal>{};
  const std::string token = authorization.substr(7);
  if (token.empty() || token.size() > 200) return std::optional<Principal>{};
  if (!config_admin_token_.empty() && constant_time_equal(token, config_admin_token_))
    return std::optional<Principal>{Principal{"config", Role::admin}};
  // Only the hash is kept, here as in the database: the cache holds no token.
  const std::string hash = sha256_hex(token);
  const auto now = clock_.mono();
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(hash); it != cache_.end() && it->second.until > now) return it->second.who;
  }
  auto grant = lookup_(hash);
  if (!grant) return grant.error();
  std::optional<Principal> who;
  if (*grant)
    if (auto role = parse_role((*grant)->role)) who = Principal{(*grant)->name, *role};
  std::lock_guard lock(mutex_);
  if (cache_.size() >= cache_max) cache_.clear();
  cache_[hash] = Cached{who, now + cache_for_};
  return who;
}

}  // namespace baton::leader
