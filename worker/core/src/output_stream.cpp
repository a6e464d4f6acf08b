#include "baton/worker_core/output_stream.h"

#include <algorithm>

#include "baton/base/utf8.h"

namespace baton::worker_core {

namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

/// How many bytes at the end of `s` begin a character that is not complete
/// yet (0 if none): they wait for the next read.
std::size_t incomplete_suffix(std::string_view s) {
  for (std::size_t k = 1; k <= std::min<std::size_t>(3, s.size()); ++k) {
    const auto b = static_cast<unsigned char>(s[s.size() - k]);
    if ((b & 0xC0) == 0x80) continue;
    const std::size_t needed = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 && b < 0xF0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 1;
    return needed > k ? k : 0;
  }
  return 0;
}

/// `p` moved back to the start of the character it is in (valid text).
std::size_t boundary_at_or_before(const std::string& text, std::size_t p) {
  while (p > 0 && p < text.size() && continuation(text[p])) --p;
  return p;
}

/// `p` moved forward to the start of the next character (valid text).
std::size_t boundary_at_or_after(const std::string& text, std::size_t p) {
  while (p < text.size() && continuation(text[p])) ++p;
  return p;
}

}  // namespace

void OutputStream::append(std::string_view raw, MonoTime now) {
  if (raw.empty()) return;
  partial_.append(raw);
  const std::size_t keep = incomplete_suffix(partial_);
  const std::string text = to_valid_utf8(std::string_view(partial_).substr(0, partial_.size() - keep));
  partial_.erase(0, partial_.size() - keep);
  if (text.empty()) return;
  if (unsent_.empty()) oldest_unsent_ = now;
  unsent_ += text;
  drop_excess();
}

void OutputStream::drop_excess() {
  if (unsent_.size() <= limits_.unsent_max) return;
  const std::size_t drop = boundary_at_or_after(unsent_, unsent_.size() - limits_.unsent_max);
  unsent_.erase(0, drop);
  unsent_offset_ += static_cast<std::int64_t>(drop);
  lost_ += static_cast<std::int64_t>(drop);
  // What is left no longer follows the sent text: a rewind must not send
  // text from before the gap as if it were contiguous.
  sent_.clear();
}

std::vector<OutputChunk> OutputStream::take(MonoTime now, bool final) {
  if (final && !partial_.empty()) {
    if (unsent_.empty()) oldest_unsent_ = now;
    unsent_ += to_valid_utf8(partial_);
    partial_.clear();
    drop_excess();
  }
  std::vector<OutputChunk> out;
  const bool flush_all = final || (oldest_unsent_ && !unsent_.empty() && now - *oldest_unsent_ >= limits_.flush_after);
  std::size_t pos = 0;
  while (pos < unsent_.size()) {
    const std::size_t left = unsent_.size() - pos;
    if (left < limits_.chunk_bytes && !flush_all) break;
    std::size_t end =
        left <= limits_.chunk_bytes ? unsent_.size() : boundary_at_or_before(unsent_, pos + limits_.chunk_bytes);
    if (end <= pos) end = pos + std::min(left, limits_.chunk_bytes);  // cannot happen with valid text
    out.push_back({unsent_offset_ + static_cast<std::int64_t>(pos), unsent_.substr(pos, end - pos)});
    pos = end;
  }
  if (pos == 0) return out;
  sent_.append(unsent_, 0, pos);
  if (sent_.size() > limits_.resend_window)
    sent_.erase(0, boundary_at_or_after(sent_, sent_.size() - limits_.resend_window));
  unsent_.erase(0, pos);
  unsent_offset_ += static_cast<std::int64_t>(pos);
  // What is left arrived no earlier than the text just taken: its age is
  // not known, so it waits at most one more flush_after.
  oldest_unsent_ = unsent_.empty() ? std::nullopt : std::optional<MonoTime>(now);
  return out;
}

void OutputStream::rewind() {
  if (sent_.empty()) return;
  oldest_unsent_ = MonoTime{};  // due at once
  unsent_offset_ -= static_cast<std::int64_t>(sent_.size());
  unsent_.insert(0, sent_);
  sent_.clear();
}

OutputChunk OutputStream::tail(std::size_t max_bytes) const {
  std::string all = sent_ + unsent_;
  const std::int64_t start = unsent_offset_ - static_cast<std::int64_t>(sent_.size());
  if (all.size() <= max_bytes) return {start, std::move(all)};
  const std::size_t cut = boundary_at_or_after(all, all.size() - max_bytes);
  return {start + static_cast<std::int64_t>(cut), all.substr(cut)};
}

}  // namespace baton::worker_core
