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

/// Accepts frames of every version in [protocol_version_min,
/// protocol_version_max]; a `bad_version` error names that range.
std::variant<Message, DecodeError> decode(std::string_view frame);
/// The frame of `m` in protocol `version`: fields a version does not have
/// are left out, so a version-1 peer reads it as it always did. A hello
/// is sent as version 1 (every node reads that) and always carries the
/// worker's range, a key version-1 nodes ignore.
std::string encode(const Message& m, int version = protocol_version_min);

/// A job's task chain as stored in job_definitions.tasks (a JSON array of
/// task objects, the same shape as in `assign`).
std::variant<std::vector<Task>, DecodeError> decode_tasks(std::string_view json_array);
std::string encode_tasks(const std::vector<Task>& tasks);

}  // namespace baton::protocol
