#pragma once
// Durable state of a worker in its spool directory:
// - the finish outbox: an append-only log (outbox/log-N.jsonl, one JSON
//   record per line). Finishes are appended and fdatasync'ed before they are
//   sent, and forgotten only on finish_ack, so a finish survives disconnects
//   and worker restarts; replays are idempotent on the leader (keyed by run,
//   attempt, lease token). Finishes that complete together are written
//   together: one write and one fdatasync for the group (group commit). Acks
//   are appended at once, without a sync of their own (a lost ack only means
//   one harmless replay). A log is deleted once every finish in it
//   is acknowledged and a newer log is current; open() rebuilds what is
//   pending by replaying the logs in order. Older worker versions wrote one
//   finish per *.json file: those are read too;
// - the journal: one line per real process start and exit, with run,
//   attempt, fence token, pid and monotonic and wall times, for checkers.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/result.h"
#include "baton/protocol/messages.h"

namespace baton::worker {

class Outbox {
 public:
  /// `clock` dates the finishes (a finish is sent again once it is older
  /// than pending()'s min_age).
  Outbox(std::string spool_dir, const Clock& clock);
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  /// Creates the directories and loads the finishes still pending on disk.
  Result<void> open();
  /// Durable when it returns: one file and one fsync for the whole group. A
  /// finish already pending for the same attempt is not written again.
  Result<void> put_all(const std::vector<protocol::Finish>& group);
  Result<void> put(const protocol::Finish& f) { return put_all({f}); }
  void remove(const protocol::AttemptRef& ref) { remove_all({ref}); }
  /// Forgets acknowledged finishes: their ack lines in one append (not
  /// synced: a lost ack costs one harmless replay).
  void remove_all(const std::vector<protocol::AttemptRef>& refs);
  /// Every finish not yet acknowledged, oldest first; with `min_age`, only
  /// those written at least that long ago.
  std::vector<protocol::Finish> pending(std::chrono::seconds min_age = std::chrono::seconds(0)) const;
  std::size_t size() const;
  /// Records found at open() that could not be read; each was copied to
  /// outbox/quarantine.txt and logged as an error.
  int quarantined() const { return quarantined_; }

 private:
  struct Entry {
    protocol::Finish finish;
    std::string file;
    MonoTime written;
    std::uint64_t seq = 0;  ///< write order, for oldest-first
  };
  static std::string key_of(const protocol::AttemptRef& ref);
  bool open_next_log();
  void retire_if_done(const std::string& file);
  void quarantine(const std::string& file, const std::string& line, const std::string& why);

  std::mutex io_mutex_;       ///< the log file: held across writes and fsyncs
  mutable std::mutex mutex_;  ///< the index below: never held across I/O
  std::string dir_;
  const Clock& clock_;
  std::map<std::string, Entry> entries_;      ///< attempt key -> pending finish
  std::map<std::string, int> live_per_file_;  ///< file -> pending finishes in it
  std::string log_path_;                      ///< the log appended to now
  int log_fd_ = -1;
  std::size_t log_bytes_ = 0;
  std::uint64_t next_log_ = 1;
  std::uint64_t next_seq_ = 0;
  int quarantined_ = 0;
};

/// Group commit into an Outbox on its own thread, so a worker's network
/// thread never waits for an fsync: finishes queued while one group is being
/// written form the next group. `on_durable` runs on the writer thread, once
/// per group, after the group is on disk (the agent posts the sends to its
/// own thread from there).
class OutboxWriter {
 public:
  using Durable = std::function<void(std::vector<protocol::Finish> group, Result<void> written)>;
  OutboxWriter(Outbox& outbox, Durable on_durable);
  ~OutboxWriter();  ///< writes what is queued, then stops
  void push(protocol::Finish f);
  /// Forgets an acknowledged finish (Outbox::remove) on the writer thread:
  /// the network thread never touches the disk.
  void ack(protocol::AttemptRef ref);
  /// Writes everything queued now, on the calling thread, and stops the
  /// writer thread (shutdown: nothing may be left only in memory).
  void drain_and_stop();

 private:
  void run();
  Outbox& outbox_;
  Durable on_durable_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<protocol::Finish> queue_;
  std::vector<protocol::AttemptRef> acks_;
  bool stop_ = false;
  std::thread thread_;
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
