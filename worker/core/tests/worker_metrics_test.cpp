// The worker's own metrics: every family conventional (HELP, TYPE, units,
// _total on counters), the numbers as given, a label value escaped.
#include "baton/worker_core/worker_metrics.h"

#include <gtest/gtest.h>

#include "baton/testing/prometheus_conventions.h"

using namespace baton;

TEST(WorkerMetrics, EveryFamilyIsConventionalAndCarriesItsNumber) {
  worker_core::WorkerMetrics m;
  m.worker_id = "w\"1";
  m.capacity = 4;
  m.running = 3;
  m.held = 4;
  m.outbox_unacknowledged = 2;
  m.attached = true;
  m.attaches = 5;
  m.reconnects = 7;
  m.spawn_failures = 1;
  m.attempts_finished = 11;
  const std::string text = worker_core::render_worker_metrics(m);
  EXPECT_EQ(baton::testing::exposition_problems(text), std::vector<std::string>{}) << text;
  for (const char* line :
       {"baton_worker_info{worker_id=\"w\\\"1\"} 1\n", "baton_worker_capacity 4\n", "baton_worker_running_attempts 3\n",
        "baton_worker_held_attempts 4\n", "baton_worker_outbox_unacknowledged 2\n", "baton_worker_attached 1\n",
        "baton_worker_attaches_total 5\n", "baton_worker_reconnects_total 7\n", "baton_worker_spawn_failures_total 1\n",
        "baton_worker_attempts_finished_total 11\n", "# TYPE baton_worker_spawn_failures_total counter\n",
        "# TYPE baton_worker_running_attempts gauge\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}
