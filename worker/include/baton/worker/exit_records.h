#pragma once
// The exit records in a worker's spool (worker_core/exit_record.h): made
// before an attempt's last task starts, removed once its finish is durable,
// and read back by the worker's next incarnation.
#include <string>
#include <vector>

#include "baton/protocol/messages.h"
#include "baton/worker_core/exit_record.h"

namespace baton::worker {

/// Creates `dir`/RUN-ATTEMPT with its header and returns it open for the
/// supervisor to append to (O_APPEND, close-on-exec: the task never holds
/// it); -1 if it cannot be made (the attempt runs without one). Not synced:
/// the supervisor's fdatasync writes the header with the status.
int open_exit_record(const std::string& dir, const protocol::AttemptRef& ref, bool any_exit);

/// Removes the attempt's record (its finish is durable elsewhere now).
void forget_exit_record(const std::string& dir, const protocol::AttemptRef& ref);

/// Every record in `dir`, read; unreadable files are skipped (and left).
std::vector<worker_core::ExitRecord> read_exit_records(const std::string& dir);

}  // namespace baton::worker
