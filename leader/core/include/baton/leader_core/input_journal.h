#pragma once
// What a RunBook is told and what it answers, as it happens: the port through
// which an incident journal (journal/) records the book's every input and
// every batch of effects taken from it. The book is a pure function of its
// construction (epoch, node, config, seed, start time) and this sequence, so
// the sequence replays to the same decisions (docs/assurance.md, "Incident
// replay"). The book calls it before it acts on each input, and with the
// effects as they are taken; a journal must not call back into the book.
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/leader_core/run_book.h"
#include "baton/protocol/messages.h"
#include "baton/store/leader_rows.h"
#include "baton/store/run_rows.h"

namespace baton::leader_core {

class InputJournal {
 public:
  virtual ~InputJournal() = default;

  virtual void start(MonoTime now) = 0;
  virtual void attached(LinkId link, const protocol::Hello& hello, MonoTime now) = 0;
  virtual void detached(LinkId link, const std::string& worker, const std::string& why, MonoTime now) = 0;
  virtual void message(LinkId link, const std::string& worker, const protocol::Message& m, MonoTime now) = 0;
  virtual void cancel(RunId run, const std::string& reason, MonoTime now) = 0;
  virtual void recheck(const std::vector<RunId>& runs, const std::string& invariant, MonoTime now) = 0;
  virtual void dispatch_now() = 0;
  virtual void inbox_noticed() = 0;
  virtual void created(const std::vector<store::DueRun>& runs, MonoTime now) = 0;
  virtual void tick(MonoTime now) = 0;

  virtual void result(OpId op, const Result<std::vector<store::ActiveRun>>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<std::optional<store::RunRow>>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<std::vector<store::DueRun>>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<std::vector<store::ScheduledJob>>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<store::WriteResult>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<store::BatchWriteResult>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<store::HeartbeatBatchResult>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<store::CreateResult>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<store::Controls>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<store::EventsProcessed>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<store::SubmissionsProcessed>& r, MonoTime now) = 0;
  virtual void result(OpId op, const Result<store::Pruned>& r, MonoTime now) = 0;

  /// The effects just taken (RunBook::take_effects), before the shell
  /// carries them out.
  virtual void effects_taken(const std::vector<Effect>& effects) = 0;
};

}  // namespace baton::leader_core
