#pragma once
// One libpqxx connection with the checks every Baton session needs: it
// connects lazily, refuses a server in recovery (a standby must never be
// written to, and a failover means a new primary that must be re-checked),
// and maps libpqxx exceptions to Result errors at this boundary so nothing
// above store/ sees pqxx. Included only inside store/.
//
// libpqxx 6.4 (Debian 12) silently reconnects a broken connection inside
// its own calls ("reactivation"), bypassing the standby check and the
// on_connect hooks (a LISTEN is lost), and was seen to hang a node's threads
// for ~20 s after a PostgreSQL restart. Every session therefore inhibits
// reactivation (a broken connection is an error this code sees, and the
// next call reconnects through ensure_connected), and every call runs under
// a client-side deadline: a watchdog thread shuts the socket of a call that
// overran it, so the call fails at once instead of waiting on a peer that
// will never answer (server-side statement_timeout cannot fire for a
// request that never reached a live backend).
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <pqxx/pqxx>

#include "baton/base/result.h"

namespace baton::store::pg {

class PgSession {
 public:
  /// `application_name` shows in pg_stat_activity (tests find a node's
  /// backends by it).
  PgSession(std::string url, std::string application_name);
  ~PgSession();
  PgSession(const PgSession&) = delete;
  PgSession& operator=(const PgSession&) = delete;

  /// Runs `fn` on a connected, primary connection. libpqxx exceptions become
  /// errors; a broken connection is dropped and re-opened on the next call.
  /// A call that takes longer than `deadline` (default call_deadline()) is
  /// cut off by closing its socket and fails with db_unavailable.
  template <class T>
  Result<T> with(const std::function<Result<T>(pqxx::connection&)>& fn);
  template <class T>
  Result<T> with(std::chrono::milliseconds deadline, const std::function<Result<T>(pqxx::connection&)>& fn);
  /// The deadline of a call made without one.
  void set_call_deadline(std::chrono::milliseconds d) { call_deadline_ = d; }
  std::chrono::milliseconds call_deadline() const { return call_deadline_; }
  /// Called by the watchdog: cuts the call in progress if it is overdue.
  void cut_if_overdue(std::chrono::steady_clock::time_point now);

  /// Connects now (if not connected) and checks the server is a primary.
  Result<void> ensure_connected();
  void disconnect();
  /// Waits up to `max` for a notification on `channel` (true) or none
  /// (false), LISTENing first on a connection that does not yet (a new one
  /// after a reconnect never does).
  Result<bool> await_notification(const std::string& channel, std::chrono::milliseconds max);
  /// Called after each (re)connect, e.g. to LISTEN or prepare statements.
  void on_connect(std::function<void(pqxx::connection&)> hook) { on_connect_ = std::move(hook); }
  const std::string& url() const { return url_; }

 private:
  Error map_current_exception();

  std::string url_;
  std::string application_name_;
  /// Marks a call in progress on `conn_` (its socket and deadline) for the
  /// watchdog; the guard's end clears it before the connection can close.
  struct CallGuard {
    CallGuard(PgSession& s, std::chrono::milliseconds deadline);
    ~CallGuard();
    /// Whether the watchdog cut this call (its error then says so).
    bool cut();
    PgSession& s;
  };

  std::unique_ptr<pqxx::connection> conn_;
  std::function<void(pqxx::connection&)> on_connect_;
  std::string listening_;            ///< the channel conn_ LISTENs on ("" none): reset with each connection
  std::size_t failed_connects_ = 0;  ///< since the last connect that worked: where the next starts (rotate_hosts)
  std::chrono::milliseconds call_deadline_{10000};
  std::mutex call_mutex_;                           ///< guards the two below against the watchdog
  int call_fd_ = -1;                                ///< socket of the call in progress, -1 if none
  std::chrono::steady_clock::time_point call_due_;  ///< when it is overdue
  bool cut_ = false;                                ///< the watchdog cut the call in progress
};

/// The URL with libpq connect/keepalive timeouts added unless present, so a
/// dead server is noticed in seconds rather than the kernel's minutes.
std::string with_default_timeouts(const std::string& url);
/// "host:port/db" of a URL for messages (never the password).
std::string describe_url(const std::string& url);
/// The URL with its host list rotated `by` places (h1,h2,h3 by 1: h2,h3,h1);
/// a URL of one host unchanged. libpq (15) tries the next host only when
/// one refuses or times out: a host that accepts the connection and then
/// closes it (a TCP proxy or load balancer in front of a dead server) ends
/// the whole attempt. A session that failed to connect starts its next
/// attempt at the next host.
std::string rotate_hosts(const std::string& url, std::size_t by);

template <class T>
Result<T> PgSession::with(const std::function<Result<T>(pqxx::connection&)>& fn) {
  return with<T>(call_deadline_, fn);
}

template <class T>
Result<T> PgSession::with(std::chrono::milliseconds deadline, const std::function<Result<T>(pqxx::connection&)>& fn) {
  if (auto ok = ensure_connected(); !ok) return ok.error();
  CallGuard guard(*this, deadline);
  try {
    return fn(*conn_);
  } catch (...) {
    Error e = map_current_exception();
    // The driver's words for a cut socket ("not connected") do not say why.
    if (guard.cut())
      e.message = "no answer from the database within this call's deadline of " + std::to_string(deadline.count()) +
                  " ms (the call was cut; the next one reconnects): " + e.message;
    return e;
  }
}

}  // namespace baton::store::pg
