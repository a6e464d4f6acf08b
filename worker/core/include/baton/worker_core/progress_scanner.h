#pragma once
// ProgressScanner: a task's progress, as it reports it on its standard
// output (docs/scheduling.md, "Progress"): a line that begins with
// `::progress::` sets the attempt's progress to the rest of the line
// (trimmed, at most progress_text_max bytes of valid UTF-8). The line is
// output like any other; the last one wins. Pure: the bytes the task printed
// in, the latest progress out. The worker keeps one per running attempt and
// sends what changed in its heartbeats (protocol version 5).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace baton::worker_core {

inline constexpr std::string_view progress_marker = "::progress::";
/// A progress text is cut to this many bytes (on a character boundary).
inline constexpr std::size_t progress_text_max = 256;

class ProgressScanner {
 public:
  /// Bytes the task wrote to its standard output, in order, split anywhere.
  void append(std::string_view raw);
  /// The text of the last complete progress line, if any.
  const std::optional<std::string>& progress() const { return progress_; }

 private:
  void end_line();

  /// The current line's first bytes: up to the marker's length, then, on a
  /// progress line, its text (bounded: the rest of a longer line is skipped).
  std::string line_;
  bool progress_line_ = false;  ///< the current line began with the marker
  bool skipping_ = false;       ///< the current line is not a progress line, or is past its bound
  std::optional<std::string> progress_;
};

}  // namespace baton::worker_core
