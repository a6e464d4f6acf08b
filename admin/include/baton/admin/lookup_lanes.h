#pragma once
// Lookups over several database connections ("lanes"), each used by one
// caller at a time. A lookup takes the first free lane, so with as many
// lanes as threads that look up (the admin API's executor), no lookup ever
// waits behind another one: a flood of tokens of the issued shape costs
// each request its own round trip, never the sum of everyone's
// (docs/security.md, "Failed authentications"). Only when every lane is
// busy (more callers than lanes) does a caller wait, on one lane chosen in
// turn.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace baton::admin {

template <class Answer>
class LookupLanes {
 public:
  using Lookup = std::function<Answer(const std::string&)>;

  LookupLanes() = default;
  explicit LookupLanes(std::vector<Lookup> lookups) {
    for (auto& l : lookups) lanes_.push_back(std::make_unique<Lane>(std::move(l)));
  }
  std::size_t size() const { return lanes_.size(); }

  /// Precondition: at least one lane.
  Answer operator()(const std::string& key) {
    for (auto& lane : lanes_) {
      std::unique_lock busy(lane->busy, std::try_to_lock);
      if (busy.owns_lock()) return lane->lookup(key);
    }
    Lane& lane = *lanes_[next_.fetch_add(1, std::memory_order_relaxed) % lanes_.size()];
    std::lock_guard busy(lane.busy);
    return lane.lookup(key);
  }

 private:
  struct Lane {
    explicit Lane(Lookup l) : lookup(std::move(l)) {}
    Lookup lookup;
    std::mutex busy;
  };
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::atomic<unsigned> next_{0};
};

}  // namespace baton::admin
