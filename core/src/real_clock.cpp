#include <chrono>

#include "baton/core/clock.h"

namespace baton {

MonoTime RealClock::mono() const { return MonoTime{std::chrono::steady_clock::now().time_since_epoch()}; }

}  // namespace baton
