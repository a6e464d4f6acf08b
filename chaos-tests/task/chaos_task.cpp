// baton-chaos-task: the chaos workload's task. It writes its own evidence of
// what it did, so the checker never has to trust the system under test for a
// safety verdict:
//
//   baton-chaos-task --evidence FILE [--sleep MS] [--exit N] [--grandchild MS] [--garbage]
//
// Every event is one JSON line appended to FILE (opened O_APPEND, each write
// under an exclusive flock so lines of concurrent processes never interleave):
//   start  {run, attempt, token, pid, pstart, pgid, ppid, role, root_pid, root_pstart, worker, mono_ns, wall_us}
//   alive  the same identity, every 100 ms while the process lives
//   exit   the same identity plus the exit status it is about to return
// `pstart` is the process start time from /proc (clock ticks since boot), so
// (pid, pstart) names one process even if the pid is reused. The run,
// attempt and fence token come from BATON_RUN_ID / BATON_ATTEMPT /
// BATON_FENCE_TOKEN, as any job would read them; `worker` from
// BATON_CHAOS_WORKER when set.
//
// --grandchild MS forks a detached grandchild (double fork, own session, so
// neither the task's process group nor the kernel's parent-death signal
// reaches it) that keeps reporting `alive` for MS milliseconds: a task tree
// that a worker must contain. --garbage prints invalid UTF-8 and more than
// the output tail of multi-byte text, cut mid-character.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Identity {
  std::string run = "0", attempt = "0", token, worker, role = "main";
  long root_pid = 0;
  long long root_pstart = 0;
};

long long now_ns(clockid_t c) {
  timespec ts{};
  ::clock_gettime(c, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

/// Field 22 of /proc/self/stat: start time in clock ticks after boot.
long long process_start_ticks() {
  std::ifstream in("/proc/self/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');  // the command name may contain spaces
  if (close == std::string::npos) return 0;
  std::istringstream rest(all.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::atoll(field.c_str());
  return 0;
}

std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) o += c;
  }
  return o + "\"";
}

class Evidence {
 public:
  Evidence(const std::string& path, Identity id) : id_(std::move(id)) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    pstart_ = process_start_ticks();
    if (id_.root_pid == 0) {
      id_.root_pid = ::getpid();
      id_.root_pstart = pstart_;
    }
  }
  ~Evidence() {
    if (fd_ >= 0) ::close(fd_);
  }
  const Identity& identity() const { return id_; }
  long long pstart() const { return pstart_; }

  void write(const char* event, const std::string& extra = "") {
    if (fd_ < 0) return;
    std::ostringstream o;
    o << "{\"ev\":\"" << event << "\",\"run\":" << std::atoll(id_.run.c_str())
      << ",\"attempt\":" << std::atoi(id_.attempt.c_str()) << ",\"token\":" << quoted(id_.token)
      << ",\"pid\":" << ::getpid() << ",\"pstart\":" << pstart_ << ",\"pgid\":" << ::getpgrp()
      << ",\"ppid\":" << ::getppid() << ",\"role\":" << quoted(id_.role) << ",\"root_pid\":" << id_.root_pid
      << ",\"root_pstart\":" << id_.root_pstart << ",\"worker\":" << quoted(id_.worker)
      << ",\"mono_ns\":" << now_ns(CLOCK_MONOTONIC) << ",\"wall_us\":" << now_ns(CLOCK_REALTIME) / 1000 << extra
      << "}\n";
    const std::string line = o.str();
    // One line per write(2) under an exclusive lock: O_APPEND makes each
    // write land at the end, the lock keeps a line whole against writers on
    // other descriptors of the same file.
    ::flock(fd_, LOCK_EX);
    std::size_t done = 0;
    while (done < line.size()) {
      ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::flock(fd_, LOCK_UN);
  }

 private:
  int fd_ = -1;
  long long pstart_ = 0;
  Identity id_;
};

/// Reports `alive` every 100 ms for `ms` milliseconds.
void live_for(Evidence& ev, long ms) {
  const long long end = now_ns(CLOCK_MONOTONIC) + ms * 1'000'000LL;
  for (;;) {
    const long long left = end - now_ns(CLOCK_MONOTONIC);
    if (left <= 0) break;
    ::usleep(static_cast<useconds_t>(std::min<long long>(left / 1000, 100'000)));
    ev.write("alive");
  }
}

void garbage() {
  // Invalid UTF-8 bytes, then 20 KiB of a 2-byte character so any byte-count
  // cut of the output tail lands mid-character, then a lone lead byte.
  std::fputs("binary:\xff\xfe\xc3(\x80\n", stdout);
  for (int i = 0; i < 10 * 1024; ++i) std::fputs("\xc3\xa9", stdout);
  std::fputs("\xe2\x82", stdout);
  std::fflush(stdout);
  std::fputs("stderr:\xff\n", stderr);
}

int usage() {
  std::fprintf(stderr,
               "usage: baton-chaos-task --evidence FILE [--sleep MS] [--exit N] [--grandchild MS] [--garbage]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string evidence;
  long sleep_ms = 0, grandchild_ms = 0;
  int exit_status = 0;
  bool print_garbage = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--evidence" && (v = next()))
      evidence = v;
    else if (a == "--sleep" && (v = next()))
      sleep_ms = std::atol(v);
    else if (a == "--exit" && (v = next()))
      exit_status = std::atoi(v);
    else if (a == "--grandchild" && (v = next()))
      grandchild_ms = std::atol(v);
    else if (a == "--garbage")
      print_garbage = true;
    else
      return usage();
  }
  if (evidence.empty()) return usage();
  Identity id;
  auto env = [](const char* k) { return std::string(std::getenv(k) ? std::getenv(k) : ""); };
  id.run = env("BATON_RUN_ID");
  id.attempt = env("BATON_ATTEMPT");
  id.token = env("BATON_FENCE_TOKEN");
  id.worker = env("BATON_CHAOS_WORKER");
  Evidence ev(evidence, id);
  ev.write("start");

  if (grandchild_ms > 0) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::setsid();
      if (::fork() != 0) ::_exit(0);  // the grandchild is re-parented away from the task
      Identity gid = ev.identity();
      gid.role = "grandchild";
      Evidence gev(evidence, gid);
      gev.write("start");
      live_for(gev, grandchild_ms);
      gev.write("exit", ",\"status\":0");
      ::_exit(0);
    }
    if (child > 0) ::waitpid(child, nullptr, 0);
  }
  if (print_garbage) garbage();
  live_for(ev, sleep_ms);
  ev.write("exit", ",\"status\":" + std::to_string(exit_status));
  return exit_status;
}
