#pragma once
// The incident journal's writing side: a leader_core::InputJournal that
// turns each input of one RunBook, and each batch of effects taken from it,
// into one line of JSON (docs/assurance.md, "Incident replay"). The first
// line of a book is its header: what RunBook was constructed with. Lines go
// to a LineSink: the node's ring of files on disk (leader/journal_ring.h),
// a test's vector.
//
// A line is {"k": kind, "w": wall-clock milliseconds, ...}: the wall clock
// only places a line in time for an export's window; the book never sees it.
// Values are written by their fields in order (journal/src/fields.h): no
// list of members to keep up, and cheap enough for every input.
// A batch of effects is recorded as its count and a digest (journal/
// replay.h compares them), not in full: the inputs are what a replay needs.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/leader_core/input_journal.h"
#include "baton/leader_core/runtime_config.h"

namespace baton::journal {

class LineSink {
 public:
  virtual ~LineSink() = default;
  /// One line, without its newline.
  virtual void line(std::string text) = 0;
};

/// What a RunBook was made with (RunBook's constructor).
struct BookHeader {
  Epoch epoch{0};
  std::string node_id;
  leader_core::RuntimeConfig cfg;
  std::uint64_t seed = 0;
  MonoTime started{};
};

class BookRecorder final : public leader_core::InputJournal {
 public:
  /// Writes the header line at once. `wall_ms`: the wall clock, in
  /// milliseconds since the Unix epoch.
  BookRecorder(const BookHeader& header, std::function<std::int64_t()> wall_ms, LineSink& sink);

  void start(MonoTime now) override;
  void attached(leader_core::LinkId link, const protocol::Hello& hello, MonoTime now) override;
  void detached(leader_core::LinkId link, const std::string& worker, const std::string& why, MonoTime now) override;
  void message(leader_core::LinkId link, const std::string& worker, const protocol::Message& m, MonoTime now) override;
  void cancel(RunId run, const std::string& reason, MonoTime now) override;
  void recheck(const std::vector<RunId>& runs, const std::string& invariant, MonoTime now) override;
  void dispatch_now() override;
  void inbox_noticed() override;
  void created(const std::vector<store::DueRun>& runs, MonoTime now) override;
  void tick(MonoTime now) override;
  void result(leader_core::OpId op, const Result<std::vector<store::ActiveRun>>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<std::optional<store::RunRow>>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<std::vector<store::DueRun>>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<std::vector<store::ScheduledJob>>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<store::WriteResult>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<store::BatchWriteResult>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<store::HeartbeatBatchResult>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<store::CreateResult>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<store::Controls>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<store::EventsProcessed>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<store::SubmissionsProcessed>& r, MonoTime now) override;
  void result(leader_core::OpId op, const Result<store::Pruned>& r, MonoTime now) override;
  void effects_taken(const std::vector<leader_core::Effect>& effects) override;

 private:
  template <class T>
  void record_result(const char* type, leader_core::OpId op, const Result<T>& r, MonoTime now);

  std::function<std::int64_t()> wall_ms_;
  LineSink& sink_;
};

}  // namespace baton::journal
