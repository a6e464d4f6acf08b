#pragma once
// A monotonic clock that moves only when a test says so.
#include "baton/base/clock.h"

namespace baton::testing {

class FakeClock final : public Clock {
 public:
  MonoTime mono() const override { return now_; }
  void advance(std::chrono::nanoseconds d) { now_.since_start += d; }

 private:
  MonoTime now_{std::chrono::seconds{1000}};
};

}  // namespace baton::testing
