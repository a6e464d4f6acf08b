#pragma once
// Whether a worker's hello may attach (docs/security.md, "Worker identity").
// The hello's token is either
//   - the worker's own credential, made when it enrolled with a bootstrap
//     token: bound to one worker id, and carrying what an operator granted
//     (labels, capacity). The hello may claim only that id, only granted
//     labels with their granted values, and at most the granted capacity;
//   - or the node's shared worker token (`worker_token_file`), if the node
//     has one: any holder may claim any id and labels. For clusters that
//     have not moved to enrollment yet; docs say so.
// The database holds only SHA-256 hashes of credentials. Lookups are cached
// for `cache_for`: a revoked credential can still attach within that time,
// and each node's sweep closes such sessions (node.cpp).
//
// admit() may block on the database: the node server calls it on its admin
// pool, never on the I/O thread.
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/lru_cache.h"
#include "baton/base/result.h"
#include "baton/protocol/messages.h"
#include "baton/store/admin_store.h"

namespace baton::leader {

struct WorkerAdmission {
  bool admitted = false;
  std::string code;                ///< refused: unauthenticated | forbidden | unavailable
  std::string message;             ///< refused: what was wrong, in words (quoted when logged)
  std::int64_t credential_id = 0;  ///< admitted with a worker credential; 0 with the shared token
};

/// What `hello` claims beyond what `credential` grants, in words; "" when
/// nothing (the id, each label and value, the capacity).
std::string grant_excess(const store::WorkerCredential& credential, const protocol::Hello& hello);

class WorkerAuthenticator {
 public:
  using Lookup = std::function<Result<std::optional<store::WorkerCredential>>(const std::string& sha256_hex)>;
  /// `shared_token`: "" when the node accepts none.
  WorkerAuthenticator(std::string shared_token, Lookup lookup, const Clock& clock, Millis cache_for = Millis{5000});

  WorkerAdmission admit(const protocol::Hello& hello);
  /// Drops cached lookups of these credentials (revoked): the next hello
  /// with one asks the database.
  void forget(const std::vector<std::int64_t>& credential_ids);

 private:
  const std::string shared_token_;
  Lookup lookup_;
  const Clock& clock_;
  const Millis cache_for_;
  std::mutex mutex_;
  LruCache<std::optional<store::WorkerCredential>> cache_;  ///< by credential hash; unknown ones too
};

}  // namespace baton::leader
