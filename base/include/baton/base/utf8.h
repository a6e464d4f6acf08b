#pragma once
// Valid UTF-8 from arbitrary bytes. A task's output is whatever bytes it
// printed; everything that crosses the wire or lands in the database must be
// valid UTF-8 (a WebSocket text frame and a JSON string are), or one byte of
// binary output would make every replay of a finish fail (a poison record).
#include <cstddef>
#include <string>
#include <string_view>

namespace baton {

/// `s` with every invalid sequence (stray continuation bytes, truncated or
/// overlong sequences, surrogates, code points past U+10FFFF) replaced by
/// U+FFFD. Valid input is returned unchanged.
std::string to_valid_utf8(std::string_view s);

/// The last at most `max_bytes` bytes of `s` as valid UTF-8: invalid
/// sequences replaced, and the cut made on a character boundary (a cut
/// through a multi-byte character drops the partial character).
std::string utf8_tail(std::string_view s, std::size_t max_bytes);

}  // namespace baton
