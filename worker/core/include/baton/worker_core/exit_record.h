#pragma once
// An attempt's exit record: a small file in the worker's spool
// (`exits/RUN-ATTEMPT`) that the worker writes before it starts the last
// task of an attempt's chain, and to which that task's supervisor appends
// the task's wait status, synced, the moment the task ends on its own
// (task_supervisor.h). The worker removes it once the attempt's finish is
// durable in its outbox. A worker killed in between -- the task has ended,
// its finish is not yet written -- leaves the record behind, and its next
// incarnation turns it into the finish it would have written, so a success
// is not thrown away and run again (docs/scheduling.md, "What became of the
// previous attempt"). Pure: the text in, what it says out.
//
//   run_id=42 attempt=1 lease_token=5b0c... any_exit=0
//   exit_status=0
#include <optional>
#include <string>

#include "baton/protocol/messages.h"

namespace baton::worker_core {

struct ExitRecord {
  protocol::AttemptRef ref;
  /// The task's exit does not decide the attempt (ignore_error): it
  /// succeeded whatever the status.
  bool any_exit = false;
  /// The wait status the supervisor recorded; none: the task did not end on
  /// its own before its worker died (it was killed with its tree).
  std::optional<int> wait_status;
};

/// The record's first line, written by the worker before the task starts.
std::string exit_record_header(const protocol::AttemptRef& ref, bool any_exit);

/// What a record says, or nullopt if it is not one (a torn or foreign file).
std::optional<ExitRecord> parse_exit_record(const std::string& text);

/// The finish a record stands for: the attempt's end as the task made it,
/// with its exit code (128 + signal for a signal); nullopt if the task did
/// not end on its own.
std::optional<protocol::Finish> finish_of(const ExitRecord& record);

}  // namespace baton::worker_core
