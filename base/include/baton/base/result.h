#pragma once
// Operating errors as values. A lost race is not an error: it is a
// WriteOutcome (see store/). Errors here are things the caller can neither
// prevent nor ignore: the database is unreachable, a write's outcome is
// unknown, a config value is bad.
#include <boost/system/result.hpp>
#include <ostream>
#include <string>
#include <utility>

namespace baton {

enum class Errc {
  db_unavailable = 1,  ///< could not connect, or the connection broke
  outcome_unknown,     ///< the commit was sent but its result was lost: re-read
  db_is_standby,       ///< connected to a server in recovery: refuse to write
  db_error,            ///< the server rejected the statement
  bad_config,
  bad_input,
  io,  ///< a local file could not be read or written
};

const char* to_string(Errc e);

struct Error {
  Errc code;
  std::string message;
  friend std::ostream& operator<<(std::ostream& os, const Error& e) {
    return os << to_string(e.code) << ": " << e.message;
  }
};

[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

template <class T>
using Result = boost::system::result<T, Error>;

inline Error make_error(Errc code, std::string message) { return Error{code, std::move(message)}; }

}  // namespace baton
