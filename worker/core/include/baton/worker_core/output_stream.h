#pragma once
// One stream (stdout or stderr) of one attempt's output on its way to the
// leader in `output` frames (docs/protocol.md, "Output"). Pure: bytes and a
// monotonic time in, chunks out; the agent holds one per stream under a lock
// (the task runner's thread appends, the io thread takes).
//
// The raw bytes a task prints become valid UTF-8 here, once: a character
// split across two reads waits for its last byte, anything invalid becomes
// U+FFFD. Offsets count that text, so the same offset always names the same
// byte, whichever frame (or resend) carries it, and the leader can place,
// deduplicate and see gaps without any state of its own.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/base/clock.h"

namespace baton::worker_core {

struct OutputLimits {
  std::size_t chunk_bytes = 16 * 1024;  ///< one frame's text at most
  /// Text is sent at the latest this long after its oldest byte arrived
  /// (a quiet stream costs nothing; a chatty one is sent in full chunks).
  Millis flush_after{1000};
  /// Unsent text kept at most (while detached): beyond it the oldest is
  /// dropped and counted as lost. Memory per stream is bounded by this plus
  /// the resend window.
  std::size_t unsent_max = 256 * 1024;
  /// Text already sent that rewind() sends again: what a leader that died
  /// may have received and never written.
  std::size_t resend_window = 64 * 1024;
};

struct OutputChunk {
  std::int64_t offset = 0;
  std::string data;
  friend bool operator==(const OutputChunk&, const OutputChunk&) = default;
};

class OutputStream {
 public:
  explicit OutputStream(OutputLimits limits = {}) : limits_(limits) {}

  /// Raw bytes the task printed, at `now`.
  void append(std::string_view raw, MonoTime now);
  /// Chunks to send now: every full chunk, and the rest once its oldest byte
  /// has waited `flush_after` or when `final` (the attempt has ended: a
  /// character still waiting for its last bytes is flushed as U+FFFD).
  std::vector<OutputChunk> take(MonoTime now, bool final);
  /// The next take() starts again at most `resend_window` bytes before what
  /// was sent (after a new welcome).
  void rewind();

  /// The offset after the last byte of text so far (the stream's length).
  std::int64_t length() const { return unsent_offset_ + static_cast<std::int64_t>(unsent_.size()); }
  /// Bytes of text dropped unsent (unsent_max exceeded).
  std::int64_t lost() const { return lost_; }
  /// The last at most `max_bytes` bytes of text sent or unsent, cut on a
  /// character boundary, and the offset it starts at (a finish's tail).
  OutputChunk tail(std::size_t max_bytes) const;

 private:
  void drop_excess();

  OutputLimits limits_;
  std::string partial_;  ///< raw bytes of a character not yet complete (at most 3)
  std::string unsent_;   ///< text not taken yet, starting at unsent_offset_
  std::int64_t unsent_offset_ = 0;
  std::string sent_;  ///< the last taken text (<= resend_window), ending at unsent_offset_
  std::optional<MonoTime> oldest_unsent_;
  std::int64_t lost_ = 0;
};

}  // namespace baton::worker_core
