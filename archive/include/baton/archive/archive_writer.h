#pragma once
// Hands streamed output to the log archive on a thread of its own. The
// control loop pushes and never waits for a disk: an archive on a network
// mount that hangs must not stall dispatch, heartbeats or fenced writes.
// What waits is bounded (`max_bytes`); beyond it chunks are dropped and
// counted (the run's log in the database still has them, up to its bound).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "baton/archive/log_archive.h"

namespace baton::archive {

class ArchiveWriter {
 public:
  explicit ArchiveWriter(const LogArchive& archive, std::size_t max_bytes = 64u << 20);
  /// Writes what is queued, then stops.
  ~ArchiveWriter();
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;

  /// Never blocks.
  void push(const std::vector<store::OutputChunk>& chunks);
  /// Waits until everything pushed so far is written (tests).
  void flush();
  std::uint64_t dropped_chunks() const;
  const LogArchive& archive() const { return archive_; }

 private:
  void run();

  const LogArchive& archive_;
  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<store::OutputChunk> queue_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool stop_ = false;
  std::uint64_t dropped_ = 0;
  std::thread thread_;  ///< last: started once everything above exists
};

}  // namespace baton::archive
