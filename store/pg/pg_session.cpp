#include "baton/store_pg/pg_session.h"

#include <spdlog/spdlog.h>

#include <pqxx/pqxx>

namespace baton::store::pg {

std::string with_default_timeouts(const std::string& url) {
  std::string out = url;
  auto add = [&](const std::string& key, const std::string& value) {
    if (out.find(key + "=") != std::string::npos) return;
    out += (out.find('?') == std::string::npos ? "?" : "&");
    out += key + "=" + value;
  };
  add("connect_timeout", "3");
  add("keepalives_idle", "5");
  add("keepalives_interval", "2");
  add("keepalives_count", "2");
  add("tcp_user_timeout", "10000");
  // A client that vanished in the middle of a transaction (partitioned,
  // paused, killed behind a proxy) must not hold the lease row's lock for
  // long: the server ends such a session after 5 s. A statement never runs
  // for more than 30 s.
  add("options", "-c%20idle_in_transaction_session_timeout%3D5000%20-c%20statement_timeout%3D30000");
  return out;
}

std::string describe_url(const std::string& url) {
  auto at = url.find('@');
  auto scheme = url.find("://");
  std::string rest = at != std::string::npos       ? url.substr(at + 1)
                     : scheme != std::string::npos ? url.substr(scheme + 3)
                                                   : url;
  if (auto q = rest.find('?'); q != std::string::npos) rest.resize(q);
  return rest;
}

PgSession::PgSession(std::string url, std::string application_name)
    : url_(std::move(url)), application_name_(std::move(application_name)) {}

PgSession::~PgSession() = default;

void PgSession::disconnect() { conn_.reset(); }

Result<void> PgSession::ensure_connected() {
  if (conn_ && conn_->is_open()) return {};
  conn_.reset();
  try {
    std::string url = with_default_timeouts(url_);
    url += "&application_name=" + application_name_;
    auto c = std::make_unique<pqxx::connection>(url);
    pqxx::nontransaction tx{*c};
    bool standby = tx.exec1("SELECT pg_is_in_recovery()")[0].as<bool>();
    tx.commit();
    if (standby) {
      return make_error(Errc::db_is_standby,
                        describe_url(url_) + " is a standby (pg_is_in_recovery); refusing to write to it");
    }
    if (on_connect_) on_connect_(*c);
    conn_ = std::move(c);
    return {};
  } catch (...) {
    return map_current_exception();
  }
}

Error PgSession::map_current_exception() {
  try {
    throw;
  } catch (const pqxx::in_doubt_error& e) {
    conn_.reset();
    return make_error(Errc::outcome_unknown, describe_url(url_) + ": " + e.what());
  } catch (const pqxx::broken_connection& e) {
    conn_.reset();
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    return make_error(Errc::db_unavailable, describe_url(url_) + ": " + what);
  } catch (const pqxx::sql_error& e) {
    if (conn_ && !conn_->is_open()) conn_.reset();
    return make_error(Errc::db_error, std::string(e.what()) + " [sqlstate " + e.sqlstate() + "]");
  } catch (const std::exception& e) {
    if (conn_ && !conn_->is_open()) conn_.reset();
    return make_error(Errc::db_error, e.what());
  }
}

}  // namespace baton::store::pg
