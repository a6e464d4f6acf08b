#include <chrono>

#include "baton/base/clock.h"

namespace baton {

MonoTime RealClock::mono() const { return MonoTime{std::chrono::steady_clock::now().time_since_epoch()}; }

}  // namespace baton
