#include "baton/worker_core/worker_metrics.h"

#include <sstream>

#include "baton/base/prometheus_label.h"

namespace baton::worker_core {

std::string render_worker_metrics(const WorkerMetrics& m) {
  std::ostringstream o;
  auto one = [&](const char* name, const char* type, const char* help, auto value) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n' << name << ' ' << value << '\n';
  };
  o << "# HELP baton_worker_info This worker's id (always 1).\n# TYPE baton_worker_info gauge\n"
    << "baton_worker_info{worker_id=\"" << prometheus_label_value(m.worker_id) << "\"} 1\n";
  one("baton_worker_capacity", "gauge", "Attempts this worker runs at once (its capacity).", m.capacity);
  one("baton_worker_running_attempts", "gauge", "Attempts whose task is running now.", m.running);
  one("baton_worker_held_attempts", "gauge", "Attempts held now: assigned, starting, running or stopping.", m.held);
  one("baton_worker_outbox_unacknowledged", "gauge",
      "Finishes written to the outbox and not yet acknowledged by a leader.", m.outbox_unacknowledged);
  one("baton_worker_attached", "gauge", "1 while attached to a leader, else 0.", m.attached ? 1 : 0);
  one("baton_worker_attaches_total", "counter", "Welcomes received from a leader.", m.attaches);
  one("baton_worker_reconnects_total", "counter", "Connection attempts after the first.", m.reconnects);
  one("baton_worker_spawn_failures_total", "counter",
      "Programs that could not be started (fork failed, or exec or chdir failed: exit 126 or 127).", m.spawn_failures);
  one("baton_worker_attempts_finished_total", "counter", "Attempts that finished, whatever their outcome.",
      m.attempts_finished);
  return o.str();
}

}  // namespace baton::worker_core
