#include "baton/store_pg/pg_session.h"

#include <spdlog/spdlog.h>

#include <sys/socket.h>

#include <algorithm>
#include <pqxx/pqxx>
#include <set>
#include <thread>
#include <vector>

#include "baton/base/weaken.h"

namespace baton::store::pg {

std::string with_default_timeouts(const std::string& url) {
  std::string out = url;
  auto add = [&](const std::string& key, const std::string& value) {
    if (out.find(key + "=") != std::string::npos) return;
    out += (out.find('?') == std::string::npos ? "?" : "&");
    out += key + "=" + value;
  };
  add("connect_timeout", "3");
  // With several hosts (postgresql://h1:5432,h2:5432/baton), connect to the
  // one that is the primary now; with one host, refuse a standby at once.
  add("target_session_attrs", "primary");
  add("keepalives_idle", "5");
  add("keepalives_interval", "2");
  add("keepalives_count", "2");
  add("tcp_user_timeout", "10000");
  // The session's own timeouts are set by its first statement
  // (ensure_connected), not by the startup parameter `options`: a pooler
  // (pgbouncer 1.18) refuses a client that sends `options`, or, told to
  // ignore it, drops the settings without a word.
  return out;
}

std::string rotate_hosts(const std::string& url, std::size_t by) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto authority = scheme + 3;
  const auto end = url.find_first_of("/?", authority);
  const auto hosts_from = [&] {
    const auto at = url.find('@', authority);
    return at != std::string::npos && (end == std::string::npos || at < end) ? at + 1 : authority;
  }();
  const std::string list = url.substr(hosts_from, end == std::string::npos ? std::string::npos : end - hosts_from);
  std::vector<std::string> hosts;
  for (std::size_t from = 0;;) {
    const auto comma = list.find(',', from);
    hosts.push_back(list.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (hosts.size() < 2 || by % hosts.size() == 0) return url;
  std::rotate(hosts.begin(), hosts.begin() + static_cast<std::ptrdiff_t>(by % hosts.size()), hosts.end());
  std::string rotated;
  for (const auto& h : hosts) rotated += (rotated.empty() ? "" : ",") + h;
  return url.substr(0, hosts_from) + rotated + (end == std::string::npos ? "" : url.substr(end));
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

namespace {

/// One thread per process watches every session's call in progress and cuts
/// the ones that overran their deadline.
class Watchdog {
 public:
  // Never destroyed: sessions owned by static objects may outlive any
  // destruction order we could choose.
  static Watchdog& instance() {
    static Watchdog* w = new Watchdog;
    return *w;
  }
  void add(PgSession* s) {
    std::lock_guard lock(mutex_);
    sessions_.insert(s);
    if (!started_) {
      started_ = true;
      std::thread([this] { run(); }).detach();
    }
  }
  void remove(PgSession* s) {
    std::lock_guard lock(mutex_);
    sessions_.erase(s);
  }

 private:
  void run() {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        const auto now = std::chrono::steady_clock::now();
        for (auto* s : sessions_) s->cut_if_overdue(now);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  std::mutex mutex_;
  std::set<PgSession*> sessions_;
  bool started_ = false;
};

}  // namespace

PgSession::PgSession(std::string url, std::string application_name)
    : url_(std::move(url)), application_name_(std::move(application_name)) {
  Watchdog::instance().add(this);
}

PgSession::~PgSession() { Watchdog::instance().remove(this); }

void PgSession::disconnect() { conn_.reset(); }

PgSession::CallGuard::CallGuard(PgSession& session, std::chrono::milliseconds deadline) : s(session) {
  std::lock_guard lock(s.call_mutex_);
  s.call_fd_ = s.conn_ ? s.conn_->sock() : -1;
  s.call_due_ = std::chrono::steady_clock::now() + deadline;
  s.cut_ = false;
}

PgSession::CallGuard::~CallGuard() {
  std::lock_guard lock(s.call_mutex_);
  s.call_fd_ = -1;
  if (s.cut_) s.conn_.reset();  // its socket is shut: never reuse it
}

bool PgSession::CallGuard::cut() {
  std::lock_guard lock(s.call_mutex_);
  return s.cut_;
}

void PgSession::cut_if_overdue(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(call_mutex_);
  if (call_fd_ < 0 || cut_ || now < call_due_) return;
  if (weakened("no_db_deadline")) return;  // weakened chaos builds only
  // The fd is still open (the owner clears call_fd_ under this mutex before
  // the connection can be closed), so this cannot hit a reused descriptor.
  cut_ = true;
  ::shutdown(call_fd_, SHUT_RDWR);
  spdlog::warn("db_call_cut session={} reason=deadline_passed", application_name_);
}

Result<void> PgSession::ensure_connected() {
  if (conn_ && conn_->is_open()) return {};
  conn_.reset();
  try {
    std::string url = with_default_timeouts(rotate_hosts(url_, failed_connects_));
    url += "&application_name=" + application_name_;
    ++failed_connects_;  // until this attempt is known to have worked
    auto c = std::make_unique<pqxx::connection>(url);
    // A broken connection must be an error this code sees, never a silent
    // reconnect inside libpqxx (see the header). Deprecated in 6.4 because 7
    // removed reactivation altogether.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    c->inhibit_reactivation(!weakened("no_db_deadline"));
#pragma GCC diagnostic pop
    pqxx::nontransaction tx{*c};
    // A client that vanished in the middle of a transaction (partitioned,
    // paused, killed behind a proxy) must not hold the lease row's lock for
    // long: the server ends such a session after 5 s. A statement never
    // runs for more than 30 s. In the same round trip as the standby check;
    // a URL with its own `options` keeps what it says.
    const bool own_options = url_.find("options=") != std::string::npos;
    bool standby = tx.exec1(own_options ? "SELECT pg_is_in_recovery()"
                                        : "SELECT pg_is_in_recovery(), "
                                          "set_config('idle_in_transaction_session_timeout', '5000', false), "
                                          "set_config('statement_timeout', '30000', false)")[0]
                       .as<bool>();
    tx.commit();
    if (standby) {
      return make_error(Errc::db_is_standby,
                        describe_url(url_) + " is a standby (pg_is_in_recovery); refusing to write to it");
    }
    listening_.clear();
    if (on_connect_) on_connect_(*c);
    conn_ = std::move(c);
    failed_connects_ = 0;
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
    // target_session_attrs=primary found no primary among the hosts: every
    // one it reached is a standby.
    if (what.find("hot standby mode") != std::string::npos || what.find("is read-only") != std::string::npos)
      return make_error(Errc::db_is_standby,
                        describe_url(url_) + " is a standby (no primary among its hosts): " + what);
    return make_error(Errc::db_unavailable, describe_url(url_) + ": " + what);
  } catch (const pqxx::sql_error& e) {
    const std::string state = e.sqlstate();
    // The server we are connected to stopped being a primary (it was
    // demoted, or we reached a standby through a proxy): drop it on any
    // statement, not only at connect, so the next call finds the primary.
    if (state == "25006") {
      conn_.reset();
      return make_error(Errc::db_is_standby,
                        describe_url(url_) + " answered read-only (sqlstate 25006): it is not the primary now");
    }
    // Terminated by an administrator, a crash or a shutdown, or a
    // connection failure reported as an error: never reuse the connection.
    if (state.rfind("57P", 0) == 0 || state.rfind("08", 0) == 0) {
      conn_.reset();
      return make_error(Errc::db_unavailable, describe_url(url_) + ": " + e.what() + " [sqlstate " + state + "]");
    }
    if (conn_ && !conn_->is_open()) conn_.reset();
    // libpqxx 6.4 leaves the code empty for some errors (a refused CREATE in
    // a transaction): no "[sqlstate ]" then.
    return make_error(Errc::db_error, std::string(e.what()) + (state.empty() ? "" : " [sqlstate " + state + "]"));
  } catch (const std::exception& e) {
    if (conn_ && !conn_->is_open()) conn_.reset();
    return make_error(Errc::db_error, e.what());
  }
}

Result<bool> PgSession::await_notification(const std::string& channel, std::chrono::milliseconds max) {
  return with<bool>(max + std::chrono::seconds(2), [&](pqxx::connection& c) -> Result<bool> {
    if (listening_ != channel) {
      pqxx::nontransaction tx{c};
      tx.exec("LISTEN " + c.quote_name(channel));
      listening_ = channel;
    }
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(max).count();
    return c.await_notification(static_cast<long>(us / 1'000'000), static_cast<long>(us % 1'000'000)) > 0;
  });
}

}  // namespace baton::store::pg
