// Open connections under the server's caps (NodeServer's own; included
// only by node_server.cpp and the session headers).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "baton/leader/node_server.h"
#include "baton/leader_core/failed_auth_limiter.h"

namespace baton::leader::serving {

/// Open connections, in total and per client source, under the caps of
/// ServerLimits. A source is an IPv4 address or an IPv6 /64
/// (leader_core::auth_source_of, as the per-source rate limits count):
/// one host is usually given a whole /64, and counted per address it could
/// open max_connections_per_address from each of 2^64 (security review). A session holds its Slot; the slot is given
/// back when the last owner (the HTTP session, then the WebSocket it became) is gone.
class ConnectionBudget : public std::enable_shared_from_this<ConnectionBudget> {
 public:
  struct Slot {
    Slot(std::shared_ptr<ConnectionBudget> b, std::string a) : budget(std::move(b)), address(std::move(a)) {}
    Slot(const Slot&) = delete;  // exactly one give_back per take
    Slot& operator=(const Slot&) = delete;
    ~Slot() { budget->give_back(address); }
    std::shared_ptr<ConnectionBudget> budget;
    std::string address;
  };
  explicit ConnectionBudget(const ServerLimits& l) : limits_(l) {}

  /// A slot for a connection from `address`, or null and why not.
  std::shared_ptr<Slot> take(const std::string& address, std::string& why) {
    const std::string source = leader_core::auth_source_of(address);
    std::lock_guard lock(mutex_);
    if (total_ >= limits_.max_connections) {
      why = "max_connections " + std::to_string(limits_.max_connections);
      return nullptr;
    }
    int& mine = per_address_[source];
    if (mine >= limits_.max_connections_per_address) {
      why = "max_connections_per_address " + std::to_string(limits_.max_connections_per_address) + " from " + source;
      return nullptr;
    }
    ++mine;
    ++total_;
    return std::make_shared<Slot>(shared_from_this(), source);
  }

 private:
  void give_back(const std::string& address) {
    std::lock_guard lock(mutex_);
    --total_;
    if (auto it = per_address_.find(address); it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
  }
  const ServerLimits limits_;
  std::mutex mutex_;
  int total_ = 0;
  std::map<std::string, int> per_address_;
};
using Slot = std::shared_ptr<ConnectionBudget::Slot>;

}  // namespace baton::leader::serving
