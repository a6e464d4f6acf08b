#include "baton/leader/statement_lane.h"

#include "baton/base/assert.h"

namespace baton::leader {

StatementLane::StatementLane(std::size_t queued_max)
    : queued_max_(queued_max), thread_([this] {
        std::unique_lock lock(mutex_);
        while (true) {
          wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
          if (jobs_.empty()) return;  // stopping, nothing left
          auto job = std::move(jobs_.front());
          jobs_.pop_front();
          running_ = true;
          lock.unlock();
          job();
          lock.lock();
          running_ = false;
          if (jobs_.empty()) idle_.notify_all();
        }
      }) {
  BATON_ASSERT(queued_max_ > 0);
}

StatementLane::~StatementLane() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void StatementLane::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return jobs_.empty() && !running_; });
}

void StatementLane::post(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    BATON_ASSERT(jobs_.size() < queued_max_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

}  // namespace baton::leader
