#include "baton/worker_core/progress_scanner.h"

#include "baton/base/assert.h"
#include "baton/base/utf8.h"

namespace baton::worker_core {

namespace {
// What a progress line may hold while it is read: the text's bound plus a
// character's last bytes and the spaces trimmed around it.
constexpr std::size_t text_read_max = progress_text_max + 64;

// The first at most `max` bytes of valid UTF-8 `s`, cut on a character
// boundary.
std::string prefix(std::string s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  return s;
}

std::string trimmed(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return std::string(s.substr(first, last - first + 1));
}
}  // namespace

void ProgressScanner::append(std::string_view raw) {
  for (char c : raw) {
    if (c == '\n') {
      end_line();
      continue;
    }
    if (skipping_) continue;
    line_.push_back(c);
    if (!progress_line_) {
      // Still reading the line's first bytes: is it the marker?
      if (line_.size() <= progress_marker.size() && progress_marker.substr(0, line_.size()) != line_) {
        skipping_ = true;
        line_.clear();
      } else if (line_.size() == progress_marker.size()) {
        progress_line_ = true;
        line_.clear();
      }
    } else if (line_.size() >= text_read_max) {
      skipping_ = true;  // the text so far is kept; the rest of the line is not
    }
    BATON_ASSERT(line_.size() <= text_read_max);
  }
}

void ProgressScanner::end_line() {
  if (progress_line_) progress_ = prefix(to_valid_utf8(trimmed(line_)), progress_text_max);
  line_.clear();
  progress_line_ = false;
  skipping_ = false;
}

}  // namespace baton::worker_core
