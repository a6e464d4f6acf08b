#pragma once
// Internal to the worker: what the Agent holds of an attempt it started,
// beside the AttemptTable's state for it (worker/core): the process side
// (its runner and thread) and what its tasks printed, until its finish is
// acknowledged.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "baton/protocol/messages.h"
#include "baton/worker/task_runner.h"
#include "baton/worker_core/output_stream.h"
#include "baton/worker_core/progress_scanner.h"

namespace baton::worker {

/// The process side of a started attempt: its runner (the supervisor's
/// control) and the thread it runs on. What the attempt may do next is the
/// AttemptTable's (worker/core).
struct Process {
  std::shared_ptr<TaskRunner> runner;
  std::thread thread;
};

/// What an attempt's tasks printed, on its way to the leader in `output`
/// frames (worker_core/output_stream.h). The runner's thread appends, the
/// io thread takes; kept until the attempt's finish is acknowledged, so a
/// new leader gets the end of it too.
struct AttemptOutput {
  protocol::AttemptRef ref;
  std::mutex mutex;
  worker_core::OutputStream streams[2];   ///< stdout, stderr (under mutex)
  worker_core::ProgressScanner progress;  ///< `::progress::` lines of stdout (under mutex)
  bool ended = false;                     ///< the attempt's process has ended (io thread only)
  /// The progress the last heartbeat carried (io thread only); cleared at
  /// a welcome, so a new leader hears every attempt's progress.
  std::optional<std::string> progress_sent;
};
inline constexpr const char* stream_names[2] = {"stdout", "stderr"};

}  // namespace baton::worker
