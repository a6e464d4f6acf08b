// What GET /readyz answers (SPEC section 8 as amended 2026-12-03): the
// node's own readiness, from memory. The node checks its database at most
// once a second on a connection of its own (check_every) and records the
// outcome here; a request reads the record and costs the database nothing,
// so a flood of /readyz from an unauthenticated source can neither reach
// the database nor take the admin API's threads and connection from the
// applications' triggers (security review N2).
#pragma once

#include <mutex>
#include <optional>

#include "baton/admin/node_status.h"
#include "baton/base/clock.h"
#include "baton/base/http_message.h"

namespace baton::admin {

class Readiness {
 public:
  /// How often the node checks its database.
  static constexpr Millis check_every{1000};
  /// A database whose last answer is older than this is not counted as
  /// answering (the checking thread is stuck, or its connection is).
  static constexpr Millis fresh_for{3000};

  /// Records one check of the database: answered or not, at `at`.
  void checked(bool answered, MonoTime at);

  /// The answer: 200 when the database answered within fresh_for and a
  /// leader is known (this node, or one with an endpoint), else 503 naming
  /// what is not. "database": "unavailable" says no more: the reason (its
  /// address, the driver's words) goes to the node's log, not to whoever
  /// asks without a credential.
  HttpResponse answer(const NodeStatus& node, MonoTime now) const;

 private:
  mutable std::mutex mutex_;
  std::optional<MonoTime> answered_at_;  ///< the last check the database answered
};

}  // namespace baton::admin
