#pragma once
// What the admin API's handlers share (admin_handlers*.cpp): the answers to
// an id or a name that is not one, and the count of a schedule's slots.
#include <cstdint>
#include <optional>
#include <string>

#include "admin_http.h"
#include "baton/base/json_text.h"

namespace baton::admin::admin_http {

inline HttpResponse bad_id(const std::string& what, const std::string& got) {
  return error(400, "bad_request", what + " must be a positive integer, got " + json_quote(got.substr(0, 64)));
}

inline HttpResponse bad_name(const std::string& what, const std::string& got) {
  return error(
      400, "bad_request",
      what + " " + json_quote(got.substr(0, 64)) + " is not valid (1-200 characters: letters, digits, '-', '_', '.')");
}

}  // namespace baton::admin::admin_http

namespace baton::admin {

/// How many slots of `schedule` fall in [since, until] (unix seconds), at
/// most `cap` (then nullopt): what was due, to set beside the ledger (a
/// job's cadence, and the cadence gauges of /metrics).
std::optional<std::int64_t> due_slots(const std::string& schedule, const std::string& time_zone, std::int64_t since,
                                      std::int64_t until, std::int64_t cap = 200'000);
/// The mean gap in seconds between consecutive slots of `schedule` from
/// `since`: over the slots in [since, until], and over at least two even
/// when fewer fall in it (a young job's window); nullopt for a schedule
/// that does not parse or fires fewer than twice.
std::optional<double> schedule_interval_s(const std::string& schedule, const std::string& time_zone, std::int64_t since,
                                          std::int64_t until);

}  // namespace baton::admin
