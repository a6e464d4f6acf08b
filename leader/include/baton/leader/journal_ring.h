#pragma once
// The incident journal on the node's disk: a bounded ring of files in
// `incident_journal_dir` (docs/assurance.md, "Incident replay"). Each book
// (one epoch this node leads) begins a new file; a file past a sixteenth of
// the bound is followed by another; the oldest files are removed to keep
// the whole under the bound. Lines are written on a thread of its own, so a
// slow disk never stalls the control loop: what waits is bounded, and lines
// beyond it are dropped and said to be (a "gap" line, where replay stops).
//
// export_window() gives what a replay of [from, to] needs: each book that
// overlaps it, from its header line (its construction) to the window's end.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/journal/book_recorder.h"

namespace baton::leader {

class JournalRing {
 public:
  /// Creates `dir` if needed; its files from earlier runs stay (the ring
  /// continues after them). Files are removed, oldest first, past
  /// `max_bytes` in all and once older than `max_age` (zero: no age
  /// bound), never the one being written.
  JournalRing(std::filesystem::path dir, std::int64_t max_bytes, std::chrono::hours max_age = std::chrono::hours{0},
              std::size_t queued_max = 64u << 20);
  /// Writes what is queued, then stops.
  ~JournalRing();
  JournalRing(const JournalRing&) = delete;
  JournalRing& operator=(const JournalRing&) = delete;

  /// Starts a book: a new file named by `epoch`, and the sink its lines
  /// go to. Each book's lines go to files of its own: a retiring loop's last
  /// lines and the next epoch's first ones may be written at once. Never
  /// blocks; the sink's lines neither.
  std::unique_ptr<journal::LineSink> begin_book(Epoch epoch);
  /// One line of the book of `epoch`. Never blocks.
  void line(Epoch epoch, std::string text);
  /// Waits until everything queued so far is on disk.
  void flush();

  /// The lines of every book whose lines overlap [from_ms, to_ms] (wall
  /// clock, ms since the Unix epoch), each from its header to the last line
  /// at or before to_ms, after a first line {"k":"window",...}. An error
  /// names a book whose beginning the ring no longer holds, or an export
  /// larger than the ring's bound.
  Result<std::string> export_window(std::int64_t from_ms, std::int64_t to_ms);

  const std::filesystem::path& dir() const { return dir_; }
  std::int64_t max_bytes() const { return max_bytes_; }

 private:
  struct Item {
    std::string text;
    Epoch epoch{0};       ///< the book it belongs to
    bool begins = false;  ///< not a line: the start of the book
  };
  void run();
  void write(const Item& item);
  void open_next(Epoch epoch);
  void trim();

  const std::filesystem::path dir_;
  const std::int64_t max_bytes_;
  const std::chrono::hours max_age_;
  const std::int64_t file_bytes_;
  const std::size_t queued_max_;
  std::mutex files_;  ///< an export's reading against the writer's trimming
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Item> queue_;
  std::size_t queued_bytes_ = 0;
  std::map<std::int64_t, std::uint64_t> dropped_;       ///< per book, lines dropped since its last gap line
  std::uint64_t queued_total_ = 0, written_total_ = 0;  ///< items, for flush()
  int flushing_ = 0;                                    ///< flush() calls waiting
  bool stop_ = false;
  // The writer thread's own:
  std::FILE* file_ = nullptr;
  std::int64_t file_written_ = 0;
  std::uint64_t next_seq_ = 1;
  Epoch epoch_{0};
  Epoch broken_{0};     ///< a line of this book was lost: its next file begins with a gap
  std::thread thread_;  ///< last: started once everything above exists
};

}  // namespace baton::leader
