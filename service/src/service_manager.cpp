#include "baton/service/service_manager.h"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <cstdlib>

namespace baton::service {

namespace {

/// A status is one line of the protocol's KEY=value text: no newline may
/// end it early and start a key of its own.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > 400) s.resize(400);
  return s;
}

}  // namespace

ServiceManager ServiceManager::from_environment() {
  ServiceManager m;
  const char* socket = std::getenv("NOTIFY_SOCKET");
  m.managed_ = socket && *socket;
  std::uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID is unset or ours.
  if (m.managed_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    m.watchdog_every_ = std::chrono::duration_cast<Millis>(std::chrono::microseconds(usec / 2));
  return m;
}

void ServiceManager::send(const std::string& state) {
  if (managed_) sd_notify(0, state.c_str());
}

void ServiceManager::ready(const std::string& status) {
  send(std::string(ready_sent_ ? "" : "READY=1\n") + "STATUS=" + one_line(status));
  ready_sent_ = true;
}

void ServiceManager::status(const std::string& status) { send("STATUS=" + one_line(status)); }

void ServiceManager::stopping(const std::string& status) { send("STOPPING=1\nSTATUS=" + one_line(status)); }

void ServiceManager::watchdog(MonoTime now) {
  if (!watchdog_every_) return;
  if (last_ping_ && now - *last_ping_ < *watchdog_every_) return;
  last_ping_ = now;
  send("WATCHDOG=1");
}

}  // namespace baton::service
