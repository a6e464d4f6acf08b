#pragma once
// A throw-away pgbouncer (scripts/pgbouncer-private) in front of a test's
// PostgreSQL, in one pool mode, stopped and removed when it goes.
#include <string>

namespace baton::testing {

class PgBouncer {
 public:
  /// `url`: a database of the test's PostgreSQL; `mode`: session,
  /// transaction or statement. url() is "" (and error() says why) if it
  /// did not start.
  PgBouncer(const std::string& url, const std::string& mode);
  ~PgBouncer();
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;

  /// `url` with the pooler's host and port: the same role, database and
  /// parameters.
  const std::string& url() const { return url_; }
  const std::string& error() const { return error_; }

 private:
  std::string parent_, url_, error_;
};

}  // namespace baton::testing
