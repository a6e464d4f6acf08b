#pragma once
// Internal to the worker: what the Agent holds of an attempt it started,
// beside the AttemptTable's state for it (worker/core): the process side
// (its runner and thread) and what its tasks printed, until its finish is
// acknowledged.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "baton/base/clock.h"
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
inline constexpr const char* stream_names[2] = {"stdout", "stderr"};

struct AttemptOutput {
  protocol::AttemptRef ref;
  std::mutex mutex;
  worker_core::OutputStream streams[2];   ///< stdout, stderr (under mutex)
  worker_core::ProgressScanner progress;  ///< `::progress::` lines of stdout (under mutex)
  bool ended = false;                     ///< the attempt's process has ended (io thread only)
  /// The progress the last heartbeat carried (io thread only); cleared at
  /// a welcome, so a new leader hears every attempt's progress.
  std::optional<std::string> progress_sent;

  /// On the runner's thread: what a task printed (stream 0 stdout, 1 stderr).
  void append(int stream, std::string_view data, MonoTime now) {
    std::lock_guard lock(mutex);
    streams[stream == 0 ? 0 : 1].append(data, now);
    if (stream == 0) progress.append(data);
  }
  /// On the io thread: the output frames due now (all of it once `ended`);
  /// `rewind` first sends the last window again (after a welcome).
  std::vector<protocol::Output> take_frames(MonoTime now, bool rewind) {
    std::vector<protocol::Output> frames;
    std::lock_guard lock(mutex);
    for (int s = 0; s < 2; ++s) {
      if (rewind) streams[s].rewind();
      for (auto& c : streams[s].take(now, ended)) frames.push_back({ref, stream_names[s], c.offset, std::move(c.data)});
    }
    return frames;
  }
  /// On the io thread: the progress to carry in the next heartbeat, if it
  /// changed since the last one carried it.
  std::optional<std::string> progress_to_send() {
    std::optional<std::string> now;
    {
      std::lock_guard lock(mutex);
      now = progress.progress();
    }
    if (!now || now == progress_sent) return std::nullopt;
    progress_sent = now;
    return now;
  }
};

}  // namespace baton::worker
