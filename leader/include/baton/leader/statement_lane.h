#pragma once
// One statement at a time on a thread of its own, in the order posted: a
// lane of the control loop (control_loop.h). The book never has more than
// one write in flight per write lane; a lane holds its bound as a
// precondition of post(), so a book that broke that rule stops the node at
// once instead of writing out of order.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace baton::leader {

/// Jobs a write lane (assignments, starts, finishes) holds queued, not yet
/// taken: RunBook's one batch in flight per lane means the next is posted
/// only once the last one's result came back, so none is queued then.
inline constexpr std::size_t write_lane_queued_max = 1;
/// Jobs the read lane holds queued: the reads of one pass step (one due
/// read per label set of free workers, the controls, the scheduled jobs,
/// unmatched and waiting runs). Far above what a pass asks; a bound, not a
/// budget.
inline constexpr std::size_t read_lane_queued_max = 4096;

class StatementLane {
 public:
  /// `queued_max`: jobs waiting to be taken, at most.
  explicit StatementLane(std::size_t queued_max);
  ~StatementLane();  ///< waits for the statement under way; drops none queued
  StatementLane(const StatementLane&) = delete;
  StatementLane& operator=(const StatementLane&) = delete;

  /// Queues `job`. Precondition: fewer than `queued_max` jobs wait to be
  /// taken (BATON_ASSERT).
  void post(std::function<void()> job);
  /// Waits until every job queued so far has run (a planned handover lets
  /// the writes in flight land before the lease goes).
  void wait_idle();

 private:
  const std::size_t queued_max_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  bool running_ = false;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;  ///< last: started once everything it reads exists
};

}  // namespace baton::leader
