// A harness that dies leaves nothing running. Its nodes, workers and
// database are its children or daemons of its own; an abort (a failed
// assertion in a library, an uncaught exception), a crash or a signal would
// otherwise leave them behind (a CI run once saw a harness end with exit
// 134 and nothing on stderr, and its three nodes, three workers and
// PostgreSQL still running). The handler says what happened, with a
// backtrace, kills the children, stops the database and then dies of the
// same cause. Best effort by nature: it runs where the process failed.
#include <execinfo.h>

#include <cstring>
#include <exception>

#include "harness.h"

namespace baton::chaos::harness {

namespace {

std::atomic<Harness*> running{nullptr};

void say(const char* text) { [[maybe_unused]] auto n = ::write(2, text, std::strlen(text)); }

void on_fatal_signal(int sig) {
  if (Harness* h = running.exchange(nullptr)) {
    say("baton-chaos: died of signal ");
    say(::strsignal(sig));
    say("; stopping its cluster\n");
    void* frames[48];
    ::backtrace_symbols_fd(frames, ::backtrace(frames, 48), 2);
    h->emergency_stop();
  }
  ::raise(sig);  // SA_RESETHAND: the default action now
}

void on_terminate() {
  if (Harness* h = running.exchange(nullptr)) {
    say("baton-chaos: terminated");
    if (auto e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        say(" by an uncaught exception: ");
        say(x.what());
      } catch (...) {
        say(" by an uncaught exception");
      }
    }
    say("; stopping its cluster\n");
    void* frames[48];
    ::backtrace_symbols_fd(frames, ::backtrace(frames, 48), 2);
    h->emergency_stop();
  }
  std::abort();
}

}  // namespace

void Harness::stop_everything_if_it_dies() {
  running = this;
  std::set_terminate(on_terminate);
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sa.sa_flags = SA_RESETHAND;
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

void Harness::emergency_stop() noexcept {
  // No lock: the thread that failed may hold it.
  for (auto& [id, p] : procs_) {
    ::kill(p->pid(), SIGCONT);
    ::kill(p->pid(), SIGKILL);
  }
  try {
    stop_postgres();
  } catch (...) {
  }
}

void Harness::finished_cleanly() { running = nullptr; }

}  // namespace baton::chaos::harness
