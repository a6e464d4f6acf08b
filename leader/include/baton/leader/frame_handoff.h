#pragma once
// FrameHandoff: the frames the control loop encodes for one worker's
// connection, handed to that connection's thread. The loop sends many
// messages in one pass; the connection's thread is woken once per burst
// (put() says when a burst begins) and takes the whole burst at once. At most
// `max` frames wait: past that the connection's thread has not kept up for as
// long as the loop took to hand it that much, and the caller closes the
// connection rather than hold frames without bound (node_server.h,
// session_send_queue_max).
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "baton/base/assert.h"

namespace baton::leader {

class FrameHandoff {
 public:
  explicit FrameHandoff(std::size_t max) : max_(max) { BATON_ASSERT(max_ > 0); }

  enum class Put {
    first,  ///< handed; nothing was waiting: wake the connection's thread
    more,   ///< handed behind frames not yet taken (a wake-up is on its way)
    full,   ///< refused: `max` frames wait already
  };
  /// On any thread.
  Put put(std::string frame) {
    std::lock_guard lock(mutex_);
    if (frames_.size() >= max_) return Put::full;
    const bool first = frames_.empty();
    frames_.push_back(std::move(frame));
    BATON_ASSERT(frames_.size() <= max_);
    return first ? Put::first : Put::more;
  }
  /// Everything handed so far, in order; on the connection's thread.
  std::vector<std::string> take() {
    std::vector<std::string> out;
    std::lock_guard lock(mutex_);
    out.swap(frames_);
    BATON_ASSERT(frames_.empty() && out.size() <= max_);
    return out;
  }

 private:
  const std::size_t max_;
  std::mutex mutex_;
  std::vector<std::string> frames_;
};

}  // namespace baton::leader
