#pragma once
// The node's own monotonic clock, behind an interface so decision logic is
// tested with a fake. It measures "how long since I last confirmed my lease";
// it is never compared with another process's clock or with the database's.
// Times from PostgreSQL's now() are only ever compared with each other, inside
// SQL.
#include <chrono>
#include <compare>

namespace baton {

using Millis = std::chrono::milliseconds;

struct MonoTime {
  std::chrono::nanoseconds since_start{0};
  friend auto operator<=>(const MonoTime&, const MonoTime&) = default;
  friend MonoTime operator+(MonoTime t, std::chrono::nanoseconds d) { return MonoTime{t.since_start + d}; }
  friend std::chrono::nanoseconds operator-(MonoTime a, MonoTime b) { return a.since_start - b.since_start; }
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonoTime mono() const = 0;
};

/// steady_clock; the only place in the tree that reads it.
class RealClock final : public Clock {
 public:
  MonoTime mono() const override;
};

}  // namespace baton
