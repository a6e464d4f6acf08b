#pragma once
// JSON text frames <-> protocol messages. decode() never throws and never
// trusts its input: size, JSON syntax, version, type and every field's type
// and range are checked, and an error names what was wrong.
#include <string>
#include <string_view>
#include <variant>

#include "baton/protocol/messages.h"

namespace baton::protocol {

struct DecodeError {
  std::string code;  ///< too_large | bad_frame | bad_version
  std::string message;
};

std::variant<Message, DecodeError> decode(std::string_view frame);
std::string encode(const Message& m);

/// A job's task chain as stored in job_definitions.tasks (a JSON array of
/// task objects, the same shape as in `assign`).
std::variant<std::vector<Task>, DecodeError> decode_tasks(std::string_view json_array);
std::string encode_tasks(const std::vector<Task>& tasks);

}  // namespace baton::protocol
