#include "baton/leader/worker_auth.h"

#include <algorithm>
#include <cctype>

#include "baton/base/json_text.h"
#include "baton/leader/node_server.h"
#include "baton/tls/token_digest.h"

namespace baton::leader {

// Worker credentials are hashed and compared like API tokens.
using tls::constant_time_equal;
using tls::issued_token_shaped;
using tls::sha256_hex;

namespace {
constexpr std::size_t cache_max = 10000;  // unknown credentials are cached too: bound the map

WorkerAdmission refuse(std::string code, std::string message) {
  return WorkerAdmission{false, std::move(code), std::move(message), 0};
}
}  // namespace

std::string grant_excess(const store::WorkerCredential& credential, const protocol::Hello& hello) {
  if (hello.worker_id != credential.worker_id)
    return "this credential belongs to worker " + json_quote(credential.worker_id) + ", not " +
           json_quote(hello.worker_id);
  if (hello.capacity > credential.capacity)
    return "capacity " + std::to_string(hello.capacity) + " is more than the " + std::to_string(credential.capacity) +
           " granted to worker " + json_quote(hello.worker_id);
  for (const auto& [key, value] : hello.labels) {
    auto granted = credential.labels.find(key);
    if (granted == credential.labels.end())
      return "label " + json_quote(key) + " is not granted to worker " + json_quote(hello.worker_id);
    if (granted->second != value)
      return "label " + json_quote(key) + " is granted as " + json_quote(granted->second) + ", not " +
             json_quote(value);
  }
  return {};
}

WorkerAuthenticator::WorkerAuthenticator(std::string shared_token, Lookup lookup, const Clock& clock, Millis cache_for)
    : shared_token_(std::move(shared_token)),
      lookup_(std::move(lookup)),
      clock_(clock),
      cache_for_(cache_for),
      cache_(cache_max) {}

WorkerAdmission WorkerAuthenticator::admit(const protocol::Hello& hello) {
  if (!shared_token_.empty() && constant_time_equal(hello.token, shared_token_))
    return WorkerAdmission{true, {}, {}, 0};
  // Credentials are all of one shape ("baton_" and 64 hex digits): anything
  // else is refused without a lookup (a flood of made-up tokens costs no
  // database work).
  if (!issued_token_shaped(hello.token)) return refuse("unauthenticated", "bad worker token");
  // Only the hash is kept, here as in the database: the cache holds no token.
  const std::string hash = sha256_hex(hello.token);
  const auto now = clock_.mono();
  std::optional<store::WorkerCredential> credential;
  bool cached = false;
  {
    std::lock_guard lock(mutex_);
    if (auto hit = cache_.find(hash, now)) {
      credential = std::move(*hit);
      cached = true;
    }
  }
  if (!cached) {
    auto found = lookup_(hash);
    if (!found) return refuse("unavailable", "cannot check the worker credential: " + found.error().message);
    credential = *found;
    std::lock_guard lock(mutex_);
    cache_.put(hash, credential, now + cache_for_);
  }
  // The same answer for a token never issued and one revoked: the caller
  // learns nothing about which credentials exist.
  if (!credential) return refuse("unauthenticated", "bad worker token");
  if (auto excess = grant_excess(*credential, hello); !excess.empty()) return refuse("forbidden", excess);
  return WorkerAdmission{true, {}, {}, credential->id};
}

void WorkerAuthenticator::forget(const std::vector<std::int64_t>& credential_ids) {
  std::lock_guard lock(mutex_);
  cache_.erase_if([&](const std::optional<store::WorkerCredential>& c) {
    return c && std::find(credential_ids.begin(), credential_ids.end(), c->id) != credential_ids.end();
  });
}

}  // namespace baton::leader
