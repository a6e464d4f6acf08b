#include "baton/worker/task_supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "baton/base/weaken.h"

namespace baton::worker {

namespace {

// ---- async-signal-safe helpers (the supervisor never allocates) ----------

std::int64_t mono_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  ::nanosleep(&ts, nullptr);
}

/// The parent pid from /proc/PID/stat, or -1.
pid_t parent_of(const char* pid_name) {
  char path[64] = "/proc/";
  std::size_t n = 6;
  for (const char* p = pid_name; *p && n < sizeof path - 6; ++p) path[n++] = *p;
  const char tail[] = "/stat";
  for (std::size_t i = 0; i < sizeof tail; ++i) path[n + i] = tail[i];
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  ssize_t got = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (got <= 0) return -1;
  buf[got] = 0;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
  // parse from the last ')'.
  char* close = nullptr;
  for (char* p = buf; *p; ++p)
    if (*p == ')') close = p;
  if (!close || close[1] == 0 || close[2] == 0) return -1;
  char* p = close + 2;
  while (*p && *p != ' ') ++p;  // the state letter
  if (*p != ' ') return -1;
  ++p;
  pid_t ppid = 0;
  for (; *p >= '0' && *p <= '9'; ++p) ppid = ppid * 10 + (*p - '0');
  return ppid;
}

/// SIGKILLs every process whose parent is `self`; returns how many.
int kill_children(pid_t self) {
  int fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  int killed = 0;
  alignas(8) char buf[8192];
  for (;;) {
    long got = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      auto* d = reinterpret_cast<struct dirent64*>(buf + off);
      off += d->d_reclen;
      if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
      if (parent_of(d->d_name) != self) continue;
      pid_t pid = 0;
      for (const char* p = d->d_name; *p; ++p) pid = pid * 10 + (*p - '0');
      ::kill(pid, SIGKILL);
      ++killed;
    }
  }
  ::close(fd);
  return killed;
}

/// Kills the task's group and every descendant, reaping until none is
/// left. A killed process's children are re-parented to this subreaper, so
/// repeating "kill my children, reap" reaches the whole tree. Returns the
/// main task's wait status if it was reaped here.
void kill_everything(pid_t self, pid_t task, bool& task_reaped, int& task_status) {
  ::kill(-task, SIGKILL);
  const std::int64_t give_up = mono_ms() + 5000;
  for (;;) {
    kill_children(self);
    int st = 0;
    pid_t r;
    while ((r = ::waitpid(-1, &st, WNOHANG)) > 0)
      if (r == task) {
        task_reaped = true;
        task_status = st;
      }
    if (r < 0 && errno == ECHILD) return;  // nothing left below us
    if (mono_ms() > give_up) return;
    sleep_ms(5);
  }
}

/// Closes every descriptor above stderr but the four given (by listing
/// /proc/self/fd: no allocation).
void close_all_except(int a, int b, int c, int d4) {
  int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  int to_close[1024];
  int count = 0;
  alignas(8) char buf[8192];
  for (;;) {
    long got = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (got <= 0) break;
    for (long off = 0; off < got && count < 1024;) {
      auto* d = reinterpret_cast<struct dirent64*>(buf + off);
      off += d->d_reclen;
      if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
      int fd = 0;
      for (const char* p = d->d_name; *p; ++p) fd = fd * 10 + (*p - '0');
      if (fd > 2 && fd != a && fd != b && fd != c && fd != d4 && fd != dir) to_close[count++] = fd;
    }
  }
  ::close(dir);
  for (int i = 0; i < count; ++i) ::close(to_close[i]);
}

[[noreturn]] void exit_with(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  ::_exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL));
}

// 'x' and the task's wait status, once; async-signal-safe. The worker reads
// it only when the supervisor itself died of a signal (reported_task_status).
void report_status(int control, int status) {
  char msg[1 + sizeof status];
  msg[0] = 'x';
  __builtin_memcpy(msg + 1, &status, sizeof status);
  (void)!::send(control, msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// The task's wait status appended to its attempt's exit record
// (exit_record.h) as "exit_status=N\n", and on disk (fdatasync) before it
// is reported to the worker: a worker killed from now on does not take the
// task's end with it. Async-signal-safe: no allocation, no stdio.
void record_exit(int record, int status) {
  if (record < 0) return;
  char msg[32] = "exit_status=";
  std::size_t n = 12;
  char digits[12];
  std::size_t k = 0;
  unsigned v = static_cast<unsigned>(status);
  do {
    digits[k++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && k < sizeof digits);
  while (k > 0) msg[n++] = digits[--k];
  msg[n++] = '\n';
  (void)!::write(record, msg, n);
  ::fdatasync(record);
}

volatile sig_atomic_t terminate_requested = 0;
extern "C" void on_terminate(int) { terminate_requested = 1; }

[[noreturn]] void die_with(const char* msg, std::size_t n) {
  (void)!::write(2, msg, n);
  ::_exit(126);
}

/// Every capability of the task's process gone, the ambient ones that exec
/// would hand on included (raw system calls: see become_task).
void drop_capabilities() {
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  static const char caps[] = "baton: cannot drop the worker's capabilities\n";
  if (::syscall(SYS_capset, &header, none) != 0) die_with(caps, sizeof caps - 1);
}

/// In the task's process, before exec: limits, then the task user. Raw
/// system calls: this process is the only thread, and glibc's set*id would
/// try to reach threads that exist only in the worker.
void become_task(const TaskProcessLimits& l) {
  if (l.address_space) {
    rlimit r{l.address_space, l.address_space};
    ::setrlimit(RLIMIT_AS, &r);
  }
  if (l.nproc) {
    rlimit r{l.nproc, l.nproc};
    ::setrlimit(RLIMIT_NPROC, &r);
  }
  if (!l.switch_user) {
    // No task user: the task runs as the worker's user, and never with its
    // capabilities (security review N1: a worker holding CAP_SETUID from its
    // unit would otherwise hand it to every task, which could become root).
    // Root stays root: exec gives uid 0 its capabilities back, and a root
    // worker without a task user runs its tasks as root (docs/security.md).
    if (::geteuid() != 0) drop_capabilities();
    return;
  }
  static const char failed[] = "baton: cannot switch to the task user\n";
  if (::syscall(SYS_setgroups, l.group_count, l.groups) != 0 || ::syscall(SYS_setresgid, l.gid, l.gid, l.gid) != 0 ||
      ::syscall(SYS_setresuid, l.uid, l.uid, l.uid) != 0)
    die_with(failed, sizeof failed - 1);
  // A worker that is not root but holds CAP_SETUID (the packaged unit's
  // ambient capabilities) keeps its capabilities across a change between
  // two non-zero users: drop every one of them here, and the ambient ones
  // that exec would otherwise hand on.
  drop_capabilities();
  static const char kept[] = "baton: the task user could switch back: refusing to run the task\n";
  if (::syscall(SYS_setresuid, 0, 0, 0) == 0) die_with(kept, sizeof kept - 1);
}

[[noreturn]] void supervise(int control, char* const* argv, char* const* envp, const char* cwd, int out_fd, int err_fd,
                            long switch_ms, bool contain, const TaskProcessLimits& limits, int exit_record) {
  const pid_t self = ::getpid();
  if (contain) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // SIGTERM (a new incarnation of the worker cleaning up after the old one,
  // or an operator) kills the tree like a cancel; dying at once would leave
  // detached descendants to init. Installed before the task is forked, which
  // restores the default for itself.
  struct sigaction sa {};
  sa.sa_handler = on_terminate;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  const pid_t task = ::fork();
  if (task < 0) ::_exit(126);
  if (task == 0) {
    ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);  // the worker ignores it; a task must not inherit that
    ::signal(SIGTERM, SIG_DFL);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::close_range(3, ~0U, 0);
    // Before the death signal: a change of user clears it.
    become_task(limits);
    // Should the supervisor itself be killed, the task's main process goes too.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != self) ::_exit(126);
    if (cwd && ::chdir(cwd) != 0) {
      const char msg[] = "baton: cannot chdir to working directory\n";
      (void)!::write(2, msg, sizeof msg - 1);
      ::_exit(126);
    }
    ::execvpe(argv[0], argv, envp);
    const char msg[] = "baton: exec failed\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(task, task);
  ::close(out_fd);
  ::close(err_fd);
  // Readable the moment the task exits, so that its status is reaped and
  // reported at once (a pidfd; without one, within the 20 ms poll).
  const int task_fd = static_cast<int>(::syscall(SYS_pidfd_open, task, 0));
  bool reaped = false;
  int status = 0;
  std::int64_t renewed = mono_ms();
  for (;;) {
    pollfd p[2] = {{control, POLLIN, 0}, {task_fd, POLLIN, 0}};
    int n = ::poll(p, task_fd >= 0 ? 2 : 1, 20);
    bool kill = false;
    if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[64];
      ssize_t got = ::read(control, buf, sizeof buf);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        kill = true;  // the worker is gone
      } else {
        for (ssize_t i = 0; i < got; ++i) {
          if (buf[i] == 'r') renewed = mono_ms();
          if (buf[i] == 'k') kill = true;
        }
      }
    }
    if (contain && switch_ms > 0 && mono_ms() - renewed > switch_ms) kill = true;  // dead-man's switch
    if (terminate_requested) kill = true;
    int st = 0;
    pid_t r;
    while ((r = ::waitpid(-1, &st, WNOHANG)) > 0)
      if (r == task) {
        reaped = true;
        status = st;
        // The task ended on its own: its end is recorded before anything
        // else (a kill of the tree below records nothing: that end was
        // the worker's decision, not the task's).
        record_exit(exit_record, status);
        report_status(control, status);
      }
    if (kill || reaped) {
      if (!contain) {  // weakened chaos builds only: the task's process group, nothing more
        ::kill(-task, SIGKILL);
        if (!reaped) ::waitpid(task, &status, 0);
        exit_with(status);
      }
      // The attempt is over (or must be): nothing of its tree outlives it.
      kill_everything(self, task, reaped, status);
      exit_with(reaped ? status : (SIGKILL & 0x7f));
    }
  }
}

}  // namespace

SupervisedTask start_supervised(char* const* argv, char* const* envp, const char* cwd, int out_fd, int err_fd,
                                std::chrono::milliseconds switch_timeout, int cgroup_procs_fd,
                                const TaskProcessLimits& limits, int exit_record_fd) {
  // A socket pair, not a pipe: writes use MSG_NOSIGNAL, so a supervisor
  // that already exited never raises SIGPIPE in the worker.
  int control[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) != 0) return {};
  const pid_t parent = ::getpid();
  const bool contain = !weakened("no_containment");  // read before fork: no getenv in the child
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(control[0]);
    ::close(control[1]);
    return {};
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::close(control[1]);
    // Into the task's cgroup before the task exists: everything it ever
    // forks is born inside (writing 0 moves the writing process).
    if (cgroup_procs_fd >= 0) (void)!::write(cgroup_procs_fd, "0", 1);
    // Keep only what the supervisor needs: the control pipe's read end and
    // the task's stdout/stderr; everything else of the worker's (its
    // WebSocket, log files) must not be held open by a task tree.
    close_all_except(control[0], out_fd, err_fd, exit_record_fd);
    if (::getppid() != parent) ::_exit(126);
    supervise(control[0], argv, envp, cwd, out_fd, err_fd, static_cast<long>(switch_timeout.count()), contain, limits,
              exit_record_fd);
  }
  ::setpgid(pid, pid);
  ::close(control[0]);
  return {pid, control[1]};
}

void renew_switch(int control_fd) {
  if (control_fd >= 0) (void)!::send(control_fd, "r", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void kill_tree(int control_fd) {
  if (control_fd >= 0) (void)!::send(control_fd, "k", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

namespace {

/// Field 22 of /proc/PID/stat (start time in clock ticks since boot): with
/// the pid, it names one process for good (pids are reused, this pair is
/// not). Empty if the process does not exist.
std::string start_time_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  for (int i = 3; i <= 22 && fields >> f; ++i)
    if (i == 22) return f;
  return {};
}

}  // namespace

void record_supervisor(const std::string& dir, pid_t supervisor) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream(dir + "/" + std::to_string(supervisor)) << start_time_of(supervisor) << '\n';
}

void forget_supervisor(const std::string& dir, pid_t supervisor) {
  std::error_code ec;
  std::filesystem::remove(dir + "/" + std::to_string(supervisor), ec);
}

std::optional<int> reported_task_status(int control_fd) {
  char buf[256];
  const ssize_t got = ::recv(control_fd, buf, sizeof buf, MSG_DONTWAIT);
  int status = 0;
  for (ssize_t i = 0; i + static_cast<ssize_t>(sizeof status) < got; ++i)
    if (buf[i] == 'x') {
      __builtin_memcpy(&status, buf + i + 1, sizeof status);
      return status;
    }
  return std::nullopt;
}

int kill_leftover_supervisors(const std::string& dir, std::chrono::milliseconds grace) {
  std::error_code ec;
  std::vector<std::pair<pid_t, std::string>> alive;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(name));
    } catch (const std::exception&) {
      continue;
    }
    std::string recorded;
    std::ifstream(entry.path()) >> recorded;
    if (pid > 1 && !recorded.empty() && start_time_of(pid) == recorded) {
      ::kill(pid, SIGTERM);  // the supervisor kills its whole tree, then exits
      alive.emplace_back(pid, recorded);
    } else {
      std::filesystem::remove(entry.path(), ec);
    }
  }
  // Bounded by steps of 10 ms, `grace` in all (no clock: a slow step only
  // waits longer).
  const auto step = std::chrono::milliseconds(10);
  std::int64_t steps_left = grace / step;
  for (auto& [pid, started] : alive) {
    while (start_time_of(pid) == started && steps_left-- > 0) std::this_thread::sleep_for(step);
    if (start_time_of(pid) == started) {
      // It did not answer (stopped, stuck): its group and itself, at least.
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    forget_supervisor(dir, pid);
  }
  return static_cast<int>(alive.size());
}

}  // namespace baton::worker
