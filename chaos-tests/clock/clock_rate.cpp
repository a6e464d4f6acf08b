// libbaton-chaos-clock.so: monotonic clock rate skew for one process,
// loaded with LD_PRELOAD by the chaos harness only (never linked into Baton).
//
// $BATON_CHAOS_CLOCK_CTL names a file holding a rate: "1.2" makes this
// process's monotonic clocks run 20 % fast from the moment it is read, "1"
// brings them back to real speed (the offset gathered so far stays: a
// monotonic clock never jumps back). The file is re-read at most every
// 50 ms of real time. Only processes whose executable is named `baton`
// (nodes, workers, and the task supervisors a worker forks without exec;
// $BATON_CHAOS_CLOCK_EXE names another) are skewed; tasks are not, so the
// chaos task's evidence keeps real times.
//
// A process whose clock runs at rate r must also *wait* by that clock: a
// wait of d on its clock takes d / r of real time, and an absolute deadline
// D on its clock is reached at real now + (D - skewed now) / r. So besides
// clock_gettime (CLOCK_MONOTONIC, _RAW, _COARSE, CLOCK_BOOTTIME) this shim
// converts the waits Baton's code reaches: nanosleep, clock_nanosleep,
// poll, ppoll, select, epoll_wait, epoll_pwait, timerfd_settime (on
// monotonic timerfds) and pthread_cond_clockwait. Without converting the
// absolute ones, a fast process would sleep until the *real* clock reached
// its skewed deadline, late by the whole offset gathered so far (why
// libfaketime's speed mode does not do here). Not converted, because Baton
// does not use them: pthread_cond_timedwait on a monotonic condition
// variable and raw futex waits.
//
// Each process appends "PID RATE" to "$BATON_CHAOS_CLOCK_CTL.hits" when it
// starts applying a rate other than 1, so the harness can tell that the
// fault took effect.
//
// Async-signal-safe and lock-free: a worker's task supervisor is forked
// from a multi-threaded process and never execs, so a lock held by another
// thread at fork time would be held for ever in the child.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

namespace {

using ns_t = std::int64_t;
constexpr ns_t ns_per_s = 1'000'000'000;
constexpr ns_t refresh_ns = 50'000'000;

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

// The real functions, resolved once at load (dlsym may allocate: never in
// a forked child).
int (*real_clock_gettime)(clockid_t, timespec*);
int (*real_nanosleep)(const timespec*, timespec*);
int (*real_clock_nanosleep)(clockid_t, int, const timespec*, timespec*);
int (*real_poll)(pollfd*, nfds_t, int);
int (*real_ppoll)(pollfd*, nfds_t, const timespec*, const sigset_t*);
int (*real_select)(int, fd_set*, fd_set*, fd_set*, timeval*);
int (*real_epoll_wait)(int, epoll_event*, int, int);
int (*real_epoll_pwait)(int, epoll_event*, int, int, const sigset_t*);
int (*real_timerfd_create)(clockid_t, int);
int (*real_timerfd_settime)(int, int, const itimerspec*, itimerspec*);
int (*real_cond_clockwait)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);

bool skewed_process = false;  ///< this executable is Baton's
const char* ctl = nullptr;

/// One rate period: from real monotonic time `since`, the offset grows by
/// (rate - 1) per real nanosecond, starting at `offset`.
struct Period {
  ns_t since = 0;
  ns_t offset = 0;
  double rate = 1.0;
};
// Readers take the published slot; the one writer (whoever wins the
// refresh) fills the next slot before publishing it. Rate changes come
// seconds apart, readers hold a slot for nanoseconds: 64 slots never wrap
// under a reader.
Period periods[64];
std::atomic<unsigned> current{0};
std::atomic<ns_t> next_refresh{0};

ns_t to_ns(const timespec& ts) { return ts.tv_sec * ns_per_s + ts.tv_nsec; }
timespec to_ts(ns_t ns) {
  if (ns < 0) ns = 0;
  return timespec{static_cast<time_t>(ns / ns_per_s), static_cast<long>(ns % ns_per_s)};
}

bool monotonic_family(clockid_t c) {
  return c == CLOCK_MONOTONIC || c == CLOCK_MONOTONIC_RAW || c == CLOCK_MONOTONIC_COARSE || c == CLOCK_BOOTTIME;
}

ns_t real_mono() {
  timespec ts{};
  real_clock_gettime(CLOCK_MONOTONIC, &ts);
  return to_ns(ts);
}

ns_t offset_at(const Period& p, ns_t real) {
  return p.offset + static_cast<ns_t>(static_cast<double>(real - p.since) * (p.rate - 1.0));
}

double read_rate() {
  int fd = ::open(ctl, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1.0;
  char buf[32] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 1.0;
  // Hand-parsed "D.DDD" (strtod is not async-signal-safe).
  double v = 0, scale = 0;
  for (ssize_t i = 0; i < n; ++i) {
    const char c = buf[i];
    if (c >= '0' && c <= '9') {
      if (scale == 0) {
        v = v * 10 + (c - '0');
      } else {
        v += (c - '0') * scale;
        scale /= 10;
      }
    } else if (c == '.' && scale == 0) {
      scale = 0.1;
    } else {
      break;
    }
  }
  return (v >= 0.1 && v <= 10) ? v : 1.0;
}

void count_hit(double rate) {
  char path[4096];
  std::snprintf(path, sizeof path, "%s.hits", ctl);
  int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[64];
  int n = std::snprintf(line, sizeof line, "%d %d.%03d\n", static_cast<int>(::getpid()), static_cast<int>(rate),
                        static_cast<int>(std::lround((rate - std::floor(rate)) * 1000)));
  (void)!::write(fd, line, static_cast<std::size_t>(n));
  ::close(fd);
}

/// The period in force at real monotonic time `real` (re-reading the
/// control file when due).
Period period(ns_t real) {
  ns_t due = next_refresh.load(std::memory_order_relaxed);
  if (real >= due && next_refresh.compare_exchange_strong(due, real + refresh_ns)) {
    const unsigned i = current.load(std::memory_order_acquire);
    const Period& now = periods[i % 64];
    const double rate = read_rate();
    if (rate != now.rate) {
      Period& n = periods[(i + 1) % 64];
      n.offset = offset_at(now, real);
      n.since = real;
      n.rate = rate;
      current.store(i + 1, std::memory_order_release);
      if (rate != 1.0) count_hit(rate);
    }
  }
  return periods[current.load(std::memory_order_acquire) % 64];
}

bool active() { return skewed_process && real_clock_gettime; }

/// A wait of `d` on the skewed clock, in real nanoseconds.
ns_t real_duration(ns_t d) {
  const double rate = period(real_mono()).rate;
  return static_cast<ns_t>(std::ceil(static_cast<double>(d) / rate));
}

/// The real time on clock `c` at which the skewed clock `c` reads `deadline`.
ns_t real_deadline(clockid_t c, ns_t deadline) {
  timespec ts{};
  real_clock_gettime(c, &ts);
  const ns_t real_now = to_ns(ts);
  const Period p = period(real_mono());
  const ns_t skewed_now = real_now + offset_at(p, real_mono());
  return real_now + static_cast<ns_t>(std::ceil(static_cast<double>(deadline - skewed_now) / p.rate));
}

int real_ms(int timeout_ms) {
  if (timeout_ms <= 0) return timeout_ms;
  return static_cast<int>(
      std::max<ns_t>(1, (real_duration(static_cast<ns_t>(timeout_ms) * 1'000'000) + 999'999) / 1'000'000));
}

// Which timerfds measure monotonic time (timerfd_create tells us).
constexpr int tracked_fds = 65536;
std::atomic<bool> monotonic_timerfd[tracked_fds];

__attribute__((constructor)) void init() {
  real_clock_gettime = next<decltype(real_clock_gettime)>("clock_gettime");
  real_nanosleep = next<decltype(real_nanosleep)>("nanosleep");
  real_clock_nanosleep = next<decltype(real_clock_nanosleep)>("clock_nanosleep");
  real_poll = next<decltype(real_poll)>("poll");
  real_ppoll = next<decltype(real_ppoll)>("ppoll");
  real_select = next<decltype(real_select)>("select");
  real_epoll_wait = next<decltype(real_epoll_wait)>("epoll_wait");
  real_epoll_pwait = next<decltype(real_epoll_pwait)>("epoll_pwait");
  real_timerfd_create = next<decltype(real_timerfd_create)>("timerfd_create");
  real_timerfd_settime = next<decltype(real_timerfd_settime)>("timerfd_settime");
  real_cond_clockwait = next<decltype(real_cond_clockwait)>("pthread_cond_clockwait");
  ctl = std::getenv("BATON_CHAOS_CLOCK_CTL");
  if (!ctl || !*ctl) return;
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  const char* base = std::strrchr(exe, '/');
  const char* name = std::getenv("BATON_CHAOS_CLOCK_EXE");  // its own test names another program
  skewed_process = std::strcmp(base ? base + 1 : exe, name && *name ? name : "baton") == 0;
  if (skewed_process) periods[0] = Period{real_mono(), 0, 1.0};
}

}  // namespace

extern "C" {

int clock_gettime(clockid_t c, timespec* ts) {
  // Called before this library's constructor has run: by the allocator's
  // own start-up, if it reads the clock while dlsym above allocates.
  if (!real_clock_gettime) return static_cast<int>(::syscall(SYS_clock_gettime, c, ts));
  const int r = real_clock_gettime(c, ts);
  if (r != 0 || !active() || !monotonic_family(c)) return r;
  const ns_t real = real_mono();
  *ts = to_ts(to_ns(*ts) + offset_at(period(real), real));
  return 0;
}

int nanosleep(const timespec* req, timespec* rem) {
  if (!active() || !req) return real_nanosleep(req, rem);
  const timespec t = to_ts(real_duration(to_ns(*req)));
  return real_nanosleep(&t, rem);
}

int clock_nanosleep(clockid_t c, int flags, const timespec* req, timespec* rem) {
  if (!active() || !req || !monotonic_family(c)) return real_clock_nanosleep(c, flags, req, rem);
  const timespec t = to_ts((flags & TIMER_ABSTIME) ? real_deadline(c, to_ns(*req)) : real_duration(to_ns(*req)));
  return real_clock_nanosleep(c, flags, &t, rem);
}

int poll(pollfd* fds, nfds_t n, int timeout_ms) {
  return real_poll(fds, n, active() ? real_ms(timeout_ms) : timeout_ms);
}

int ppoll(pollfd* fds, nfds_t n, const timespec* tmo, const sigset_t* mask) {
  if (!active() || !tmo) return real_ppoll(fds, n, tmo, mask);
  const timespec t = to_ts(real_duration(to_ns(*tmo)));
  return real_ppoll(fds, n, &t, mask);
}

int select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* tv) {
  if (!active() || !tv) return real_select(n, r, w, e, tv);
  const ns_t d = real_duration((tv->tv_sec * 1'000'000 + tv->tv_usec) * 1000);
  timeval t{static_cast<time_t>(d / ns_per_s), static_cast<suseconds_t>((d % ns_per_s) / 1000)};
  return real_select(n, r, w, e, &t);
}

int epoll_wait(int fd, epoll_event* ev, int max, int timeout_ms) {
  return real_epoll_wait(fd, ev, max, active() ? real_ms(timeout_ms) : timeout_ms);
}

int epoll_pwait(int fd, epoll_event* ev, int max, int timeout_ms, const sigset_t* mask) {
  return real_epoll_pwait(fd, ev, max, active() ? real_ms(timeout_ms) : timeout_ms, mask);
}

int timerfd_create(clockid_t c, int flags) {
  const int fd = real_timerfd_create(c, flags);
  if (fd >= 0 && fd < tracked_fds) monotonic_timerfd[fd] = monotonic_family(c);
  return fd;
}

int timerfd_settime(int fd, int flags, const itimerspec* value, itimerspec* old) {
  if (!active() || !value || fd < 0 || fd >= tracked_fds || !monotonic_timerfd[fd].load())
    return real_timerfd_settime(fd, flags, value, old);
  itimerspec v = *value;
  const ns_t when = to_ns(v.it_value);
  if (when != 0) {  // zero disarms, in either mode
    if (flags & TFD_TIMER_ABSTIME) {
      const ns_t real = real_deadline(CLOCK_MONOTONIC, when);
      v.it_value = to_ts(std::max<ns_t>(real, 1));
    } else {
      v.it_value = to_ts(std::max<ns_t>(real_duration(when), 1));
    }
  }
  if (to_ns(v.it_interval) != 0) v.it_interval = to_ts(std::max<ns_t>(real_duration(to_ns(v.it_interval)), 1));
  return real_timerfd_settime(fd, flags, &v, old);
}

int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t c, const timespec* abstime) {
  if (!active() || !monotonic_family(c)) return real_cond_clockwait(cond, mutex, c, abstime);
  const timespec t = to_ts(real_deadline(c, to_ns(*abstime)));
  return real_cond_clockwait(cond, mutex, c, &t);
}

}  // extern "C"
