#pragma once
// How the control loop talks to one attached worker without knowing about
// sockets: the WebSocket session implements this. Both calls are thread-safe
// and never block (messages are queued on the session's strand).
#include <cstdint>
#include <memory>
#include <string>

#include "baton/protocol/messages.h"

namespace baton::leader {

class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  virtual void send(const protocol::Message& m) = 0;
  virtual void close(const std::string& reason) = 0;
  virtual std::uint64_t id() const = 0;
};

}  // namespace baton::leader
