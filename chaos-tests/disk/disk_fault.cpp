// libbaton-chaos-disk.so: a disk fault for one worker, loaded with
// LD_PRELOAD by the chaos harness only (never linked into Baton).
//
// It wraps fdatasync/fsync. For a file whose path contains "/outbox/" it
// reads the mode the harness wrote into $BATON_CHAOS_DISK_CTL:
//   ok     -- the call goes through;
//   stall  -- the call blocks while the mode stays "stall" (a degraded or
//             hung spool disk), then goes through;
//   full   -- the call fails with ENOSPC (the spool is full).
// Every call it delayed or failed is counted by one line appended to
// "$BATON_CHAOS_DISK_CTL.hits", so the harness can tell that the fault took
// effect. Other files, and processes without the variable, are untouched.
#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

enum class Mode { ok, stall, full };

Mode read_mode(const char* ctl) {
  int fd = ::open(ctl, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Mode::ok;
  char buf[16] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return Mode::ok;
  if (std::strncmp(buf, "stall", 5) == 0) return Mode::stall;
  if (std::strncmp(buf, "full", 4) == 0) return Mode::full;
  return Mode::ok;
}

bool is_outbox(int fd) {
  char link[64], path[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = ::readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = 0;
  return std::strstr(path, "/outbox/") != nullptr;
}

void count_hit(const char* ctl, const char* what) {
  char path[4096];
  std::snprintf(path, sizeof path, "%s.hits", ctl);
  int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, what, std::strlen(what));
  ::close(fd);
}

/// 0 to go on with the real call, -1 (errno set) to fail it.
int apply(int fd) {
  const char* ctl = std::getenv("BATON_CHAOS_DISK_CTL");
  if (!ctl || !*ctl || !is_outbox(fd)) return 0;
  Mode m = read_mode(ctl);
  if (m == Mode::full) {
    count_hit(ctl, "full\n");
    errno = ENOSPC;
    return -1;
  }
  if (m == Mode::stall) {
    count_hit(ctl, "stall\n");
    // Bounded: a harness that died must not hang the worker for ever.
    for (int i = 0; i < 600 && read_mode(ctl) == Mode::stall; ++i) {
      timespec ts{0, 50'000'000};
      ::nanosleep(&ts, nullptr);
    }
  }
  return 0;
}

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" int fdatasync(int fd) {
  static auto next = real<int (*)(int)>("fdatasync");
  if (apply(fd) != 0) return -1;
  return next(fd);
}

extern "C" int fsync(int fd) {
  static auto next = real<int (*)(int)>("fsync");
  if (apply(fd) != 0) return -1;
  return next(fd);
}
