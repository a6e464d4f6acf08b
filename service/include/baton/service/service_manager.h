#pragma once
// What a node or a worker tells the service manager that started it
// (systemd's notification protocol, docs/operations.md, "Packaging and
// services"): that it is ready (a node serves, a worker is attached), a
// one-line status for `systemctl status`, that it is stopping, and a
// watchdog ping while its main loop lives. Outside systemd (no
// NOTIFY_SOCKET) every call does nothing.
#include <chrono>
#include <optional>
#include <string>

#include "baton/base/clock.h"

namespace baton::service {

class ServiceManager {
 public:
  /// Reads NOTIFY_SOCKET and WATCHDOG_USEC (WATCHDOG_PID, when set, must
  /// be this process) as the service manager set them.
  static ServiceManager from_environment();

  bool managed() const { return managed_; }
  /// READY=1 with a status line. Once is enough; later calls only update
  /// the status.
  void ready(const std::string& status);
  void status(const std::string& status);
  void stopping(const std::string& status);
  /// How often to ping: half the watchdog timeout (WatchdogSec=), or none.
  std::optional<Millis> watchdog_every() const { return watchdog_every_; }
  /// WATCHDOG=1 when one is due at `now` (a monotonic time): called from
  /// the loop whose life it vouches for, as often as that loop turns.
  void watchdog(MonoTime now);

 private:
  void send(const std::string& state);
  bool managed_ = false;
  bool ready_sent_ = false;
  std::optional<Millis> watchdog_every_;
  std::optional<MonoTime> last_ping_;
};

}  // namespace baton::service
