// baton-chaos-clock-probe: the clock-rate shim's test subject. Run under
// the shim at a known rate, it measures how its monotonic clock and its
// waits compare with the real (wall) clock, which the shim leaves alone,
// and prints one line per measurement: NAME MONO_MS REAL_MS.
#include <time.h>

#include <boost/asio.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace {

double ms(const timespec& a, const timespec& b) {
  return static_cast<double>(b.tv_sec - a.tv_sec) * 1000 + static_cast<double>(b.tv_nsec - a.tv_nsec) / 1e6;
}

template <class F>
void measure(const char* name, F&& wait) {
  timespec m0{}, r0{}, m1{}, r1{};
  ::clock_gettime(CLOCK_MONOTONIC, &m0);
  ::clock_gettime(CLOCK_REALTIME, &r0);
  wait();
  ::clock_gettime(CLOCK_MONOTONIC, &m1);
  ::clock_gettime(CLOCK_REALTIME, &r1);
  std::printf("%s %.1f %.1f\n", name, ms(m0, m1), ms(r0, r1));
}

}  // namespace

int main() {
  using namespace std::chrono_literals;
  // Give the shim its first read of the control file.
  std::this_thread::sleep_for(100ms);
  measure("sleep_for", [] { std::this_thread::sleep_for(400ms); });
  measure("busy", [] {
    timespec r0{}, r{};
    ::clock_gettime(CLOCK_REALTIME, &r0);
    do ::clock_gettime(CLOCK_REALTIME, &r);
    while (ms(r0, r) < 300);
  });
  std::mutex m;
  std::condition_variable cv;
  measure("cv_wait_for", [&] {
    std::unique_lock lock(m);
    cv.wait_for(lock, 400ms, [] { return false; });
  });
  // An absolute deadline read from the skewed clock after it has gathered
  // an offset: waited by the skewed clock, not until the real one reaches it.
  measure("cv_wait_until", [&] {
    std::unique_lock lock(m);
    cv.wait_until(lock, std::chrono::steady_clock::now() + 400ms, [] { return false; });
  });
  measure("asio_timer", [] {
    boost::asio::io_context ioc;
    boost::asio::steady_timer t(ioc, 400ms);
    t.async_wait([](boost::system::error_code) {});
    ioc.run();
  });
  return 0;
}
