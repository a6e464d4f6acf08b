#pragma once
// Durable state of a worker in its spool directory:
// - the finish outbox: one file per finished attempt, written (tmp, fsync,
//   rename) before the finish is sent and removed only on finish_ack, so a
//   finish survives disconnects and worker restarts; replays are idempotent
//   on the leader (keyed by run, attempt, lease token);
// - the journal: one line per real process start and exit, with run,
//   attempt, fence token, pid and monotonic and wall times, for checkers.
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "baton/core/result.h"
#include "baton/protocol/messages.h"

namespace baton::worker {

class Outbox {
 public:
  explicit Outbox(std::string spool_dir);
  Result<void> open();  ///< creates the directories
  Result<void> put(const protocol::Finish& f);
  void remove(const protocol::AttemptRef& ref);
  /// Every finish not yet acknowledged, oldest first; with `min_age`, only
  /// those written at least that long ago.
  std::vector<protocol::Finish> pending(std::chrono::seconds min_age = std::chrono::seconds(0)) const;

 private:
  std::string path_for(const protocol::AttemptRef& ref) const;
  std::string dir_;
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
