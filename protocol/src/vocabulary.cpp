#include "baton/protocol/vocabulary.h"
#include "baton/protocol/messages.h"

namespace baton::protocol {

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::succeeded: return "SUCCEEDED";
    case Outcome::failed: return "FAILED";
    case Outcome::timed_out: return "TIMED_OUT";
    case Outcome::canceled: return "CANCELED";
  }
  return "FAILED";
}

const char* to_string(Builtin b) {
  switch (b) {
    case Builtin::noop: return "NOOP";
    case Builtin::sleep: return "SLEEP";
    case Builtin::log: return "LOG";
    case Builtin::fail: return "FAIL";
  }
  return "NOOP";
}

std::optional<Outcome> parse_outcome(std::string_view s) {
  for (Outcome o : {Outcome::succeeded, Outcome::failed, Outcome::timed_out, Outcome::canceled})
    if (s == to_string(o)) return o;
  return std::nullopt;
}

std::optional<Builtin> parse_builtin(std::string_view s) {
  for (Builtin b : {Builtin::noop, Builtin::sleep, Builtin::log, Builtin::fail})
    if (s == to_string(b)) return b;
  return std::nullopt;
}

}  // namespace baton::protocol

namespace baton::protocol {

bool is_attempt_fate(const std::string& fate) {
  return fate == "succeeded_unacknowledged" || fate == "fenced_out" || fate == "lost_contact" || fate == "timed_out" ||
         fate == "failed";
}

}  // namespace baton::protocol
