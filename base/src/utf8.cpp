#include "baton/base/utf8.h"

namespace baton {

namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

/// Length of the valid sequence starting at s[i], or 0 if it is invalid
/// (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF).
std::size_t valid_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = valid_sequence(s, i);
    if (n == 0) {
      out += replacement;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string utf8_tail(std::string_view s, std::size_t max_bytes) {
  if (s.size() > max_bytes) s = s.substr(s.size() - max_bytes);
  // A cut through a character leaves its continuation bytes at the front.
  std::size_t skip = 0;
  while (skip < s.size() && skip < 3 && (static_cast<unsigned char>(s[skip]) & 0xC0) == 0x80) ++skip;
  std::string out = to_valid_utf8(s.substr(skip));
  // Replacements are longer than the bytes they replace: cut again, on a
  // boundary (the string is valid now, so a lead byte starts each character).
  if (out.size() > max_bytes) {
    std::size_t from = out.size() - max_bytes;
    while (from < out.size() && (static_cast<unsigned char>(out[from]) & 0xC0) == 0x80) ++from;
    out.erase(0, from);
  }
  return out;
}

}  // namespace baton
