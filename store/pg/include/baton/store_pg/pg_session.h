#pragma once
// One libpqxx connection with the checks every Baton session needs: it
// connects lazily, refuses a server in recovery (a standby must never be
// written to, and a failover means a new primary that must be re-checked),
// and maps libpqxx exceptions to Result errors at this boundary so nothing
// above store/ sees pqxx. Included only inside store/.
#include <functional>
#include <memory>
#include <string>

#include <pqxx/pqxx>

#include "baton/core/result.h"

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
  template <class T>
  Result<T> with(const std::function<Result<T>(pqxx::connection&)>& fn);

  /// Connects now (if not connected) and checks the server is a primary.
  Result<void> ensure_connected();
  void disconnect();
  /// Called after each (re)connect, e.g. to LISTEN or prepare statements.
  void on_connect(std::function<void(pqxx::connection&)> hook) { on_connect_ = std::move(hook); }
  const std::string& url() const { return url_; }

 private:
  Error map_current_exception();

  std::string url_;
  std::string application_name_;
  std::unique_ptr<pqxx::connection> conn_;
  std::function<void(pqxx::connection&)> on_connect_;
};

/// The URL with libpq connect/keepalive timeouts added unless present, so a
/// dead server is noticed in seconds rather than the kernel's minutes.
std::string with_default_timeouts(const std::string& url);
/// "host:port/db" of a URL for messages (never the password).
std::string describe_url(const std::string& url);

template <class T>
Result<T> PgSession::with(const std::function<Result<T>(pqxx::connection&)>& fn) {
  if (auto ok = ensure_connected(); !ok) return ok.error();
  try {
    return fn(*conn_);
  } catch (...) {
    return map_current_exception();
  }
}

}  // namespace baton::store::pg
