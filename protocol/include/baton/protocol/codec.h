#pragma once
// JSON text frames <-> protocol messages. decode() never throws and never
// trusts its input: size, JSON syntax, version, type and every field's type
// and range are checked, and an error names what was wrong.
#include <deque>
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
/// protocol_version_max]; a `bad_version` error names that range. One
/// message: a `batch` is an unknown type here (a hello is never batched).
std::variant<Message, DecodeError> decode(std::string_view frame);
/// A frame of one message, or from version 3 a `batch` of them: the
/// messages in the order they were sent. A batch holds 1 to
/// batch_messages_max whole frames (each of a version this binary speaks),
/// none of them a hello or a batch; an error in one refuses the whole frame
/// and names its index.
std::variant<std::vector<Message>, DecodeError> decode_frame(std::string_view frame);
/// Takes the next frame to write off the front of `queue` (frames made by
/// encode() in `version`; the queue must not be empty). In version 3 and
/// later, frames queued together leave as one `batch` frame of up to
/// batch_bytes_max bytes and batch_messages_max messages: one write, one
/// wake-up and one read for the lot instead of one each. Otherwise, and for
/// a frame that is alone or too large to join, the front frame as it is.
std::string next_frame(std::deque<std::string>& queue, int version);
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
