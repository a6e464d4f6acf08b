// libFuzzer target: a frame from the network, as a node or a worker reads
// it (protocol::decode_frame), then every message it held encoded again and
// decoded again (what decodes must encode, and read back the same way).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "baton/protocol/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  auto decoded = baton::protocol::decode_frame(frame);
  if (auto* messages = std::get_if<std::vector<baton::protocol::Message>>(&decoded)) {
    // Every message is representable in the newest version; what was read
    // must be written so that it reads back (a failure here is a bug: trap).
    for (const auto& m : *messages) {
      const std::string again = baton::protocol::encode(m, baton::protocol::protocol_version_max);
      if (std::holds_alternative<baton::protocol::DecodeError>(baton::protocol::decode_frame(again)))
        __builtin_trap();
    }
  }
  return 0;
}
