#include "baton/store_pg/session_check.h"

#include <random>

#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

namespace {

/// One round: a channel of its own (nothing else listens on it), LISTEN on
/// `listener` in its own transaction, NOTIFY from `notifier`, wait.
Result<bool> one_round(PgSession& listener, PgSession& notifier, std::chrono::milliseconds max) {
  std::random_device rd;
  const std::string channel = "baton_session_check_" + std::to_string(rd()) + std::to_string(rd());
  // LISTENs (a transaction of its own) and returns at once: nothing was sent yet.
  if (auto listening = listener.await_notification(channel, std::chrono::milliseconds(0)); !listening)
    return listening.error();
  auto sent = notifier.with<bool>([&](pqxx::connection& c) -> Result<bool> {
    pqxx::nontransaction tx{c};
    tx.exec_params("SELECT pg_notify($1, 'session check')", channel);
    return true;
  });
  if (!sent) return sent.error();
  return listener.await_notification(channel, max);
}

}  // namespace

Result<SessionCheck> check_session_kept(const std::string& url, const std::string& application_name,
                                        std::chrono::milliseconds max) {
  PgSession listener(url, application_name + "-session-check");
  PgSession notifier(url, application_name + "-session-check");
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 2; ++round) {
    auto heard = one_round(listener, notifier, max);
    if (!heard) return heard.error();
    if (*heard)
      return SessionCheck{
          true, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)};
  }
  return SessionCheck{false,
                      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)};
}

std::string session_not_kept_finding(const std::string& where, std::chrono::milliseconds max) {
  return where + " does not keep a session per connection: a NOTIFY from a second connection did not reach the " +
         "one that had LISTENed, twice in " + std::to_string(max.count()) +
         " ms each. A connection pooler in transaction or statement mode (pgbouncer pool_mode = transaction) "
         "does this; Baton's nodes need one server session per connection (LISTEN/NOTIFY, prepared statements, "
         "session settings)";
}

std::string session_not_kept_fix() {
  return "set pool_mode = session for Baton's database, or connect to PostgreSQL directly (docs/operations.md, "
         "\"Behind a connection pooler\")";
}

}  // namespace baton::store::pg
