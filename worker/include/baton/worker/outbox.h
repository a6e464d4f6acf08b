#pragma once
// Durable state of a worker in its spool directory:
// - the finish outbox: finishes are written (tmp, fsync, rename, fsync of
//   the directory) before they are sent, and forgotten only on finish_ack,
//   so a finish survives disconnects and worker restarts; replays are
//   idempotent on the leader (keyed by run, attempt, lease token). Finishes
//   that complete together are written together: one file and one fsync for
//   the group (group commit), since an fsync per finish was the worker's
//   throughput ceiling. A file is removed when its last finish is acked;
//   which finishes are still pending is kept in memory and rebuilt from the
//   files on open();
// - the journal: one line per real process start and exit, with run,
//   attempt, fence token, pid and monotonic and wall times, for checkers.
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "baton/core/clock.h"
#include "baton/core/result.h"
#include "baton/protocol/messages.h"

namespace baton::worker {

class Outbox {
 public:
  explicit Outbox(std::string spool_dir);
  /// Creates the directories and loads the finishes still pending on disk.
  Result<void> open();
  /// Durable when it returns: one file and one fsync for the whole group. A
  /// finish already pending for the same attempt is not written again.
  Result<void> put_all(const std::vector<protocol::Finish>& group);
  Result<void> put(const protocol::Finish& f) { return put_all({f}); }
  void remove(const protocol::AttemptRef& ref);
  /// Every finish not yet acknowledged, oldest first; with `min_age`, only
  /// those written at least that long ago.
  std::vector<protocol::Finish> pending(std::chrono::seconds min_age = std::chrono::seconds(0)) const;
  std::size_t size() const;

 private:
  struct Entry {
    protocol::Finish finish;
    std::string file;
    MonoTime written;
    std::uint64_t seq = 0;  ///< write order, for oldest-first
  };
  static std::string key_of(const protocol::AttemptRef& ref);

  mutable std::mutex mutex_;
  std::string dir_;
  std::map<std::string, Entry> entries_;        ///< attempt key -> pending finish
  std::map<std::string, int> live_per_file_;    ///< file -> pending finishes in it
  std::uint64_t next_seq_ = 0;
};

class Journal {
 public:
  explicit Journal(std::string path) : path_(std::move(path)) {}
  void record(const char* event, const protocol::AttemptRef& ref, int pid);

 private:
  std::mutex mutex_;
  std::string path_;
};

}  // namespace baton::worker
