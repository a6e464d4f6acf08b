#pragma once
// A bounded map that forgets its least recently used entry when it is full,
// each entry valid until a time its writer gives. Pure (the caller passes
// the time) and not thread-safe (callers hold their own lock).
//
// The credential caches of the API and of worker admission use it: unknown
// tokens are cached too, so a flood of made-up ones fills the cache; with
// this policy it evicts only entries nobody has asked for lately (other
// made-up tokens), where clearing the whole cache when full (what they did
// before) also dropped every caller in use, who then cost a database lookup
// each (docs/security.md).
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "baton/base/clock.h"

namespace baton {

template <class Value>
class LruCache {
 public:
  explicit LruCache(std::size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  /// The value under `key` if present and valid at `now`; marks it used.
  std::optional<Value> find(const std::string& key, MonoTime now) {
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    if (it->second->until <= now) {
      order_.erase(it->second);
      index_.erase(it);
      return std::nullopt;
    }
    order_.splice(order_.begin(), order_, it->second);
    return it->second->value;
  }

  /// Stores `value` under `key` until `until`, as the most recently used
  /// entry; forgets the least recently used one if the cache is full.
  void put(const std::string& key, Value value, MonoTime until) {
    if (auto it = index_.find(key); it != index_.end()) {
      it->second->value = std::move(value);
      it->second->until = until;
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    if (order_.size() >= capacity_) {
      index_.erase(order_.back().key);
      order_.pop_back();
    }
    order_.push_front(Entry{key, std::move(value), until});
    index_[key] = order_.begin();
  }

  /// Forgets every entry whose value matches.
  template <class Pred>
  void erase_if(Pred matches) {
    for (auto it = order_.begin(); it != order_.end();) {
      if (matches(it->value)) {
        index_.erase(it->key);
        it = order_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::size_t size() const { return order_.size(); }

 private:
  struct Entry {
    std::string key;
    Value value;
    MonoTime until;
  };
  std::size_t capacity_;
  std::list<Entry> order_;  ///< most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
};

}  // namespace baton
