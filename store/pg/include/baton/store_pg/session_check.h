#pragma once
// Whether a database URL keeps a session per connection. Baton's nodes
// LISTEN for notifications, prepare statements and set session settings,
// all of which live in one server session. Direct to PostgreSQL, or through
// a pooler in session mode (pgbouncer pool_mode = session), each client
// connection is one session. A pooler in transaction or statement mode hands
// every transaction to whichever server connection is free: a LISTEN is
// made on one server session and the client then waits on none, so a node
// behind it would never hear a notification and its prepared statements
// would vanish between transactions. The node refuses to start on such a
// URL (cmd/baton) and `baton doctor` fails it; docs/operations.md, "Behind a
// connection pooler".
#include <chrono>
#include <string>

#include "baton/base/result.h"

namespace baton::store::pg {

struct SessionCheck {
  /// A NOTIFY sent from a second connection reached the first one, which
  /// had LISTENed in a transaction of its own before.
  bool kept = false;
  std::chrono::milliseconds waited{0};  ///< until it arrived, or the whole wait
};

/// Two connections to `url`: one LISTENs on a channel of its own, the other
/// NOTIFYs it, the first waits up to `max` for it. Tried twice before
/// `kept` is false. db_unavailable or db_error when the database could not
/// be asked at all.
Result<SessionCheck> check_session_kept(const std::string& url, const std::string& application_name,
                                        std::chrono::milliseconds max);

/// What a node or `baton doctor` says when the check fails: what was seen
/// and why it breaks Baton; then what to change.
std::string session_not_kept_finding(const std::string& where, std::chrono::milliseconds max);
std::string session_not_kept_fix();

}  // namespace baton::store::pg
