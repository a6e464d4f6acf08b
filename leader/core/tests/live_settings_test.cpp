// The live settings (live_settings.h): what a stored value means, what is
// refused, and that the leader applies each at its next read of the
// controls, without a restart.
#include "baton/leader_core/live_settings.h"

#include <gtest/gtest.h>

#include "baton/leader_core/run_book.h"
#include "run_book_driver.h"

namespace baton::leader_core {
namespace {

using namespace std::chrono_literals;
using namespace run_book_testing;

TEST(LiveSettings, UnsetKeysMeanTheNodeConfig) {
  RuntimeConfig base;
  base.reassign_after = 7000ms;
  auto live = live_settings({}, base);
  EXPECT_TRUE(live.cron_enabled);
  EXPECT_TRUE(live.events_enabled);
  EXPECT_TRUE(live.dispatch_paused.empty());
  EXPECT_EQ(live.runtime.reassign_after, 7000ms);
  EXPECT_TRUE(live.refused.empty());
}

TEST(LiveSettings, StoredValuesGoOverTheNodeConfig) {
  auto live = live_settings({{"reassign_after_ms", {"2500"}},
                             {"heartbeat_interval_ms", {"500"}},
                             {"heartbeat_timeout_ms", {"2000"}},
                             {"continuation_timeout_ms", {"60000"}},
                             {"continuation_margin_ms", {"3000"}},
                             {"dispatch_batch", {"64"}},
                             {"cron_enabled", {"false"}},
                             {"events_enabled", {"false"}},
                             {"dispatch_paused_selectors", {"pool=gpu", "zone=b,pool=cpu"}},
                             {"retention_days", {"3"}},
                             {"someone_elses_key", {"x"}}},
                            RuntimeConfig{});
  EXPECT_TRUE(live.refused.empty()) << live.refused[0];
  EXPECT_EQ(live.runtime.reassign_after, 2500ms);
  EXPECT_EQ(live.runtime.heartbeat_interval, 500ms);
  EXPECT_EQ(live.runtime.heartbeat_timeout, 2000ms);
  EXPECT_EQ(live.runtime.continuation_timeout, 60000ms);
  EXPECT_EQ(live.runtime.continuation_margin, 3000ms);
  EXPECT_EQ(live.runtime.dispatch_batch, 64);
  EXPECT_FALSE(live.cron_enabled);
  EXPECT_FALSE(live.events_enabled);
  ASSERT_EQ(live.dispatch_paused.size(), 2u);
  EXPECT_EQ(live.dispatch_paused[1], (std::map<std::string, std::string>{{"pool", "cpu"}, {"zone", "b"}}));
}

TEST(LiveSettings, AValueOutOfRangeIsRefusedWithItsKeyAndTheRestApplies) {
  RuntimeConfig base;
  auto live = live_settings({{"dispatch_batch", {"0"}},
                             {"reassign_after_ms", {"soon"}},
                             {"cron_enabled", {"no"}},
                             {"dispatch_paused_selectors", {"pool"}},
                             {"heartbeat_interval_ms", {"800"}}},
                            base);
  ASSERT_EQ(live.refused.size(), 4u);
  EXPECT_NE(live.refused[0].find("cron_enabled"), std::string::npos) << live.refused[0];
  EXPECT_NE(live.refused[1].find("dispatch_batch: not a whole number from 1 to 100000"), std::string::npos)
      << live.refused[1];
  EXPECT_NE(live.refused[2].find("dispatch_paused_selectors: \"pool\" is not a selector"), std::string::npos)
      << live.refused[2];
  EXPECT_NE(live.refused[3].find("reassign_after_ms"), std::string::npos) << live.refused[3];
  EXPECT_EQ(live.runtime.dispatch_batch, base.dispatch_batch);
  EXPECT_TRUE(live.cron_enabled) << "a gate that cannot be read stays open";
  EXPECT_EQ(live.runtime.heartbeat_interval, 800ms);
}

TEST(LiveSettings, TimingsThatBreakARuleTogetherAreNotAppliedAtAll) {
  RuntimeConfig base;  // interval 1 s, timeout 5 s, margin 10 s
  auto live = live_settings({{"heartbeat_timeout_ms", {"20000"}}, {"reassign_after_ms", {"3000"}}}, base);
  ASSERT_EQ(live.refused.size(), 1u);
  EXPECT_NE(live.refused[0].find("continuation_margin_ms (10000) must be at least heartbeat_timeout_ms (20000)"),
            std::string::npos)
      << live.refused[0];
  EXPECT_EQ(live.runtime.heartbeat_timeout, base.heartbeat_timeout);
  EXPECT_EQ(live.runtime.reassign_after, base.reassign_after) << "none of the set, not half of it";
  live = live_settings({{"heartbeat_interval_ms", {"5000"}}}, base);
  ASSERT_EQ(live.refused.size(), 1u);
  EXPECT_NE(live.refused[0].find("heartbeat_timeout_ms (5000) must be greater than heartbeat_interval_ms (5000)"),
            std::string::npos);
}

TEST(LiveSettings, SelectorsAreKeyValuePairs) {
  EXPECT_EQ(parse_selector("pool=gpu"), (std::map<std::string, std::string>{{"pool", "gpu"}}));
  EXPECT_EQ(parse_selector("a=1,b=2")->size(), 2u);
  for (const char* bad : {"", "pool", "=gpu", "pool=", "a=1,", "a=1,a=2", ",a=1"})
    EXPECT_FALSE(parse_selector(bad)) << bad;
}

TEST(LiveSettings, EveryKeyIsInTheCatalogueOnce) {
  std::set<std::string_view> keys;
  for (const auto& s : live_setting_specs()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    EXPECT_FALSE(s.effect.empty()) << s.key;
    if (s.kind == SettingKind::integer) {
      EXPECT_LT(s.min, s.max) << s.key;
    }
  }
  EXPECT_EQ(live_setting_spec("dispatch_batch")->max, 100000);
  EXPECT_EQ(live_setting_spec("nope"), nullptr);
}

// --- the leader applies them at its next read of the controls ---------------

TEST(LiveSettingsInTheBook, CronOffCreatesNoSlotsAndEventsOffProcessesNone) {
  RuntimeConfig c = config();
  c.prune_every = 1000ms;
  Driver d(c);
  d.controls.settings = {{"cron_enabled", {"false"}}, {"events_enabled", {"false"}}};
  d.start();
  auto e = d.tick(1000ms);
  EXPECT_TRUE(all<ReadScheduledJobs>(e).empty());
  EXPECT_TRUE(all<ProcessEvents>(e).empty());
  EXPECT_EQ(all<Prune>(e).size(), 1u) << "retention goes on";
  d.controls.settings = {{"events_enabled", {"false"}}};
  e = d.tick(2000ms);
  EXPECT_EQ(all<ReadScheduledJobs>(e).size(), 1u) << "cron back on, without a restart";
  EXPECT_TRUE(all<ProcessEvents>(e).empty());
  d.controls.settings = {};
  EXPECT_EQ(all<ProcessEvents>(d.tick(3000ms)).size(), 1u);
}

TEST(LiveSettingsInTheBook, WorkersAPausedSelectorMatchesGetNoNewRunsAndOthersDo) {
  Driver d;
  d.controls.settings = {{"dispatch_paused_selectors", {"pool=gpu"}}};
  d.start();
  auto gpu = hello("w1");
  gpu.labels = {{"pool", "gpu"}};
  d.attach(7, gpu);
  d.due = {due_run(5, 1)};
  EXPECT_TRUE(all<WriteAssigns>(d.tick(100ms)).empty()) << "the only worker is paused";
  d.attach(8, hello("w2"));
  auto assigns = all<WriteAssigns>(d.tick(200ms));
  ASSERT_EQ(assigns.size(), 1u);
  ASSERT_EQ(assigns[0].rows.size(), 1u);
  EXPECT_EQ(assigns[0].rows[0].worker_id, "w2");
  EXPECT_EQ(d.book.links(), (std::vector<LinkId>{7, 8})) << "a paused worker stays attached";
}

TEST(LiveSettingsInTheBook, DispatchBatchAndHeartbeatCadenceFollowTheSettings) {
  Driver d;
  d.controls.settings = {
      {"dispatch_batch", {"2"}}, {"heartbeat_interval_ms", {"400"}}, {"heartbeat_timeout_ms", {"1500"}}};
  d.start();
  d.tick(50ms);  // the controls are read
  d.due = {due_run(5, 1)};
  auto welcomed = sent<protocol::Welcome>(d.attach(7, hello("w1")));
  ASSERT_EQ(welcomed.size(), 1u);
  EXPECT_EQ(welcomed[0].heartbeat_interval_ms, 400);
  EXPECT_EQ(welcomed[0].heartbeat_timeout_ms, 1500);
  auto e = d.tick(100ms);
  auto reads = all<ReadDue>(e);
  ASSERT_FALSE(reads.empty());
  EXPECT_EQ(reads[0].limit, 2) << "four free slots, a batch of two";
  for (const auto& w : all<WriteAssigns>(e)) d.answer(w.op, assigned(5));
  // Unset: the node config's values again, at the next read.
  d.controls.settings = {};
  d.tick(700ms);
  welcomed = sent<protocol::Welcome>(d.attach(8, hello("w2")));
  ASSERT_EQ(welcomed.size(), 1u);
  EXPECT_EQ(welcomed[0].heartbeat_interval_ms, config().heartbeat_interval.count());
}

TEST(LiveSettingsInTheBook, AnAssignmentNotStartedWithinTheLiveReassignDelayIsOrphaned) {
  Driver d;
  d.controls.settings = {{"reassign_after_ms", {"2000"}}};
  auto r = active(1, RunState::assigned, "w1");
  r.assigned_age_ms = 0;
  d.begin({r}, hello("w1"));
  d.tick(1000ms);
  bool orphaned = false;
  for (Millis t = 1500ms; t <= 3000ms && !orphaned; t += 500ms) {
    d.msg(7, "w1", protocol::Heartbeat{});
    for (const auto& w : all<WriteRun>(d.tick(t))) orphaned = orphaned || w.kind == RunWriteKind::orphan;
  }
  EXPECT_TRUE(orphaned) << "within 2 s, not the node config's 10 s";
}

}  // namespace
}  // namespace baton::leader_core
