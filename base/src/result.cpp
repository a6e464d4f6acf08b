#include "baton/base/result.h"

#include <stdexcept>

namespace baton {

const char* to_string(Errc e) {
  switch (e) {
    case Errc::db_unavailable: return "db_unavailable";
    case Errc::outcome_unknown: return "outcome_unknown";
    case Errc::db_is_standby: return "db_is_standby";
    case Errc::db_error: return "db_error";
    case Errc::bad_config: return "bad_config";
    case Errc::bad_input: return "bad_input";
    case Errc::io: return "io";
  }
  return "unknown";
}

void throw_exception_from_error(const Error& e, const boost::source_location&) {
  throw std::runtime_error(std::string(to_string(e.code)) + ": " + e.message);
}

}  // namespace baton
