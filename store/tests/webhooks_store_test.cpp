// Webhooks in the database (schemas/0038), against real PostgreSQL: the
// deliveries queued in the transaction of the event they tell of (a run's
// final failure and its dead letter, a job's Nth failure in a row, a new
// epoch), and the queue as the leader's sender takes it (claimed only under
// the current epoch, once per lease, each outcome recorded for its attempt).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "baton/store_pg/pg_webhook_outbox.h"
#include "overlap_fixture.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

namespace json = boost::json;

class WebhooksStoreTest : public OverlapStoreTest {
 protected:
  void SetUp() override { plain_jobs({"etl", "other"}); }
  void hook(const std::string& name, std::vector<std::string> events, std::vector<std::string> jobs = {},
            int failures_in_a_row = 3, bool enabled = true) {
    WebhookDefinition w;
    w.name = name;
    w.url = "https://127.0.0.1:9/" + name;
    w.events = std::move(events);
    w.jobs = std::move(jobs);
    w.failures_in_a_row = failures_in_a_row;
    w.enabled = enabled;
    w.secret = "secret-of-" + name + "-0123456789";
    auto r = admin.put_webhook(Actor{"test", epoch}, w);
    ASSERT_TRUE(r && r->outcome == AdminOutcome::applied) << (r ? r->message : r.error().message);
  }
  /// "kind:job" of a webhook's deliveries, oldest first.
  std::string queued(const std::string& webhook) {
    return text(
        "SELECT coalesce(string_agg(d.kind || ':' || coalesce(d.body::jsonb #>> '{data,job}', '-'), ' ' ORDER BY d.id),"
        " '-') FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.name = '" +
        webhook + "'");
  }
  json::object body(const std::string& webhook, const std::string& kind, int nth = 0) {
    return json::parse(text("SELECT d.body FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
                            " WHERE w.name = '" +
                            webhook + "' AND d.kind = '" + kind + "' ORDER BY d.id OFFSET " + std::to_string(nth) +
                            " LIMIT 1"))
        .as_object();
  }
  PgWebhookOutbox outbox{url, "test-webhooks"};
};

TEST_F(WebhooksStoreTest, ARunsFinalFailureIsQueuedForEachWebhookThatListsItInItsOwnStatement) {
  hook("all", {"dead_letter", "run_failed"});
  hook("etl-only", {"run_failed"}, {"etl"});
  hook("other-only", {"run_failed"}, {"other"});
  hook("off", {"dead_letter", "run_failed"}, {}, 3, /*enabled=*/false);
  const RunId retried = run_of("etl"), failed = run_of("etl"), ok = run_of("etl");
  end(retried, false, /*retry=*/true);
  EXPECT_EQ(queued("all"), "-") << "a failure that is retried is not the end";
  end(failed, false);
  end(ok, true);
  EXPECT_EQ(queued("all"), "dead_letter:etl run_failed:etl");
  EXPECT_EQ(queued("etl-only"), "run_failed:etl");
  EXPECT_EQ(queued("other-only"), "-");
  EXPECT_EQ(queued("off"), "-") << "a disabled webhook is told nothing";

  const auto dl = body("all", "dead_letter"), rf = body("all", "run_failed");
  EXPECT_EQ(dl.at("webhook").as_string(), "all");
  EXPECT_EQ(dl.at("data").at("run_id").as_int64(), failed.value);
  EXPECT_EQ(dl.at("data").at("final_state").as_string(), "FAILED");
  EXPECT_EQ(dl.at("data").at("error_code").as_string(), "exit_3");
  EXPECT_EQ(rf.at("data").at("state").as_string(), "FAILED");
  // One event, one id, whichever webhook is told of it; two events, two ids.
  EXPECT_EQ(rf.at("id"), body("etl-only", "run_failed").at("id"));
  EXPECT_NE(rf.at("id"), dl.at("id"));
  EXPECT_EQ(text("SELECT count(DISTINCT event_id) FROM webhook_deliveries"), "2");
}

TEST_F(WebhooksStoreTest, FailuresInARowAreToldOnceAtTheThresholdAndASuccessStartsTheCountOver) {
  hook("streak", {"failures_in_a_row"}, {}, 2);
  end(run_of("etl"), false);
  EXPECT_EQ(queued("streak"), "-");
  end(run_of("etl"), false);
  EXPECT_EQ(queued("streak"), "failures_in_a_row:etl");
  EXPECT_EQ(body("streak", "failures_in_a_row").at("data").at("failures").as_int64(), 2);
  end(run_of("etl"), false);
  EXPECT_EQ(queued("streak"), "failures_in_a_row:etl") << "told once per streak, not at every failure after";
  end(run_of("other"), false);
  EXPECT_EQ(text("SELECT failures FROM job_failure_streaks s JOIN job_definitions j ON j.id = s.job_definition_id"
                 " WHERE j.name = 'etl'"),
            "3");

  end(run_of("etl"), true);
  EXPECT_EQ(text("SELECT count(*) FROM job_failure_streaks s JOIN job_definitions j ON j.id = s.job_definition_id"
                 " WHERE j.name = 'etl'"),
            "0")
      << "a success ends the streak";
  // Two failures of one job in one statement (a batch) cross the threshold
  // together: told once, at the count they reached.
  end(std::vector<RunId>{run_of("etl"), run_of("etl")}, false);
  EXPECT_EQ(queued("streak"), "failures_in_a_row:etl failures_in_a_row:etl");
  EXPECT_EQ(body("streak", "failures_in_a_row", 1).at("data").at("failures").as_int64(), 2);
  end(run_of("other"), false);
  EXPECT_EQ(queued("streak"), "failures_in_a_row:etl failures_in_a_row:etl failures_in_a_row:other");
}

TEST_F(WebhooksStoreTest, ALeaderChangeIsQueuedWithTheEpochBeforeIt) {
  hook("leaders", {"leader_changed"});
  hook("failures", {"run_failed"});
  const Epoch before = epoch;
  const Epoch after = force_election(url, "n2");
  EXPECT_EQ(queued("leaders"), "leader_changed:-");
  EXPECT_EQ(queued("failures"), "-");
  const auto b = body("leaders", "leader_changed");
  EXPECT_EQ(b.at("data").at("epoch").as_int64(), after.value);
  EXPECT_EQ(b.at("data").at("leader_id").as_string(), "n2");
  EXPECT_EQ(b.at("data").at("previous_epoch").as_int64(), before.value);
  EXPECT_EQ(b.at("data").at("previous_leader_id").as_string(), "n1");
}

TEST_F(WebhooksStoreTest, TheSenderClaimsUnderTheCurrentEpochOncePerLeaseAndRecordsEachAttempt) {
  hook("ops", {"run_failed"});
  auto ping = admin.ping_webhook(Actor{"test", epoch}, "ops");
  ASSERT_TRUE(ping && ping->outcome == AdminOutcome::applied);
  // One ping outstanding per webhook (security review N-L1): a second is
  // refused while the first is pending, naming it.
  auto second_ping = admin.ping_webhook(Actor{"test", epoch}, "ops");
  ASSERT_TRUE(second_ping);
  EXPECT_EQ(second_ping->outcome, AdminOutcome::conflict);
  EXPECT_EQ(second_ping->message, "a ping to webhook 'ops' is pending already: one at a time");
  EXPECT_EQ(json::parse(second_ping->json).at("id"), json::parse(ping->json).at("id"));
  EXPECT_EQ(text("SELECT count(*) FROM webhook_deliveries"), "1");

  auto stale = outbox.claim_deliveries(Epoch{epoch.value - 1}, 10, Millis{60000});
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->current_epoch, epoch);
  EXPECT_TRUE(stale->deliveries.empty()) << "a node that no longer leads claims nothing";

  auto first = outbox.claim_deliveries(epoch, 10, Millis{60000});
  ASSERT_TRUE(first && first->deliveries.size() == 1u);
  const ClaimedDelivery d = first->deliveries[0];
  EXPECT_EQ(d.webhook, "ops");
  EXPECT_EQ(d.kind, "ping");
  EXPECT_EQ(d.attempt, 1);
  EXPECT_EQ(d.secret, "secret-of-ops-0123456789");
  EXPECT_EQ(json::parse(d.body).at("id").as_string(), d.event_id);
  EXPECT_TRUE(outbox.claim_deliveries(epoch, 10, Millis{60000})->deliveries.empty()) << "claimed for its lease";

  DeliveryRecord retry{d.id, 1, DeliveryRecord::Outcome::retry, 503, "HTTP 503", Millis{0}};
  ASSERT_TRUE(*outbox.record_delivery(retry));
  auto second = outbox.claim_deliveries(epoch, 10, Millis{60000});
  ASSERT_TRUE(second && second->deliveries.size() == 1u);
  EXPECT_EQ(second->deliveries[0].attempt, 2);
  EXPECT_EQ(second->deliveries[0].event_id, d.event_id) << "the same event id on every attempt";
  EXPECT_EQ(second->deliveries[0].body, d.body) << "the same bytes on every attempt";
  EXPECT_FALSE(*outbox.record_delivery(retry)) << "attempt 1 ended long ago: its record comes too late";

  ASSERT_TRUE(*outbox.record_delivery({d.id, 2, DeliveryRecord::Outcome::delivered, 204, "", Millis{0}}));
  EXPECT_EQ(text("SELECT state || ' ' || attempts || ' ' || last_status || ' ' || (finished_at IS NOT NULL)"
                 " FROM webhook_deliveries"),
            "delivered 2 204 true");
  EXPECT_TRUE(outbox.claim_deliveries(epoch, 10, Millis{60000})->deliveries.empty());

  // An operator sends it again: pending at once, attempts from 0.
  auto again = admin.redeliver(Actor{"test", epoch}, d.id);
  ASSERT_TRUE(again && again->outcome == AdminOutcome::applied);
  auto third = outbox.claim_deliveries(epoch, 10, Millis{60000});
  ASSERT_TRUE(third && third->deliveries.size() == 1u);
  EXPECT_EQ(third->deliveries[0].attempt, 1);
  ASSERT_TRUE(*outbox.record_delivery({d.id, 1, DeliveryRecord::Outcome::failed, 410, "HTTP 410 Gone", Millis{0}}));
  EXPECT_EQ(text("SELECT state || ' ' || last_error FROM webhook_deliveries"), "failed HTTP 410 Gone");

  // A disabled webhook's pending deliveries wait.
  ASSERT_TRUE(admin.ping_webhook(Actor{"test", epoch}, "ops"));
  hook("ops", {"run_failed"}, {}, 3, /*enabled=*/false);
  EXPECT_TRUE(outbox.claim_deliveries(epoch, 10, Millis{60000})->deliveries.empty());
}

// A claim takes one delivery per webhook, and none of a webhook whose
// claim is still out (security review N-L1): a receiver with a backlog
// never fills a batch ahead of the others, and its deliveries go in order.
TEST_F(WebhooksStoreTest, AClaimTakesOneDeliveryPerWebhookAndNoneOfAWebhookWithOneOut) {
  hook("slow", {"run_failed"});
  hook("fast", {"run_failed"});
  // Three pending for slow (a ping each, relabelled: one ping may be
  // outstanding per webhook), then one for fast.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(admin.ping_webhook(Actor{"test", epoch}, "slow"));
    ASSERT_EQ(text("WITH u AS (UPDATE webhook_deliveries SET kind = 'run_failed' WHERE kind = 'ping' RETURNING 1)"
                   " SELECT count(*) FROM u"),
              "1");
  }
  ASSERT_TRUE(admin.ping_webhook(Actor{"test", epoch}, "fast"));
  ASSERT_EQ(text("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'"), "4");

  auto first = outbox.claim_deliveries(epoch, 10, Millis{60000});
  ASSERT_TRUE(first);
  ASSERT_EQ(first->deliveries.size(), 2u) << "one of slow's three, and fast's";
  EXPECT_EQ(first->deliveries[0].webhook, "slow");
  EXPECT_EQ(first->deliveries[1].webhook, "fast");
  const std::int64_t slow_first = first->deliveries[0].id;
  EXPECT_EQ(text("SELECT min(id) FROM webhook_deliveries WHERE webhook_id = (SELECT id FROM webhooks"
                 " WHERE name = 'slow')"),
            std::to_string(slow_first))
      << "its oldest";
  EXPECT_TRUE(outbox.claim_deliveries(epoch, 10, Millis{60000})->deliveries.empty())
      << "slow's other two wait for its claim to come back";

  ASSERT_TRUE(*outbox.record_delivery({slow_first, 1, DeliveryRecord::Outcome::delivered, 200, "", Millis{0}}));
  auto second = outbox.claim_deliveries(epoch, 10, Millis{60000});
  ASSERT_TRUE(second && second->deliveries.size() == 1u);
  EXPECT_EQ(second->deliveries[0].webhook, "slow");
  EXPECT_GT(second->deliveries[0].id, slow_first);
  // A claim of an earlier epoch does not hold a webhook back: the next
  // leader takes the delivery over (TheNextLeaderTakesOver... below).
}

// A leader killed between its POST and the record of the answer leaves a
// claim behind: the next leader takes it over at once instead of waiting
// for its lease, and a late record of the old attempt no longer applies.
TEST_F(WebhooksStoreTest, TheNextLeaderTakesOverAClaimOfAnEarlierEpochAtOnce) {
  hook("ops", {"run_failed"});
  ASSERT_TRUE(admin.ping_webhook(Actor{"test", epoch}, "ops"));
  auto first = outbox.claim_deliveries(epoch, 10, Millis{600000});
  ASSERT_TRUE(first && first->deliveries.size() == 1u);
  EXPECT_TRUE(outbox.claim_deliveries(epoch, 10, Millis{600000})->deliveries.empty());
  const Epoch next = force_election(url, "n2");
  auto taken = outbox.claim_deliveries(next, 10, Millis{600000});
  ASSERT_TRUE(taken && taken->deliveries.size() == 1u);
  EXPECT_EQ(taken->deliveries[0].attempt, 2);
  EXPECT_EQ(taken->deliveries[0].event_id, first->deliveries[0].event_id);
  EXPECT_FALSE(
      *outbox.record_delivery({first->deliveries[0].id, 1, DeliveryRecord::Outcome::delivered, 200, "", Millis{0}}))
      << "the old leader's record of its attempt comes too late";
  EXPECT_TRUE(outbox.claim_deliveries(next, 10, Millis{600000})->deliveries.empty())
      << "the new leader's own claim holds";
}

// Deliveries that ended (delivered or given up) go with the retention
// window; a pending one stays whatever its age.
TEST_F(WebhooksStoreTest, EndedDeliveriesArePrunedWithRetentionAndPendingOnesKept) {
  hook("ops", {"run_failed"});
  hook("ops2", {"run_failed"});
  ASSERT_TRUE(admin.ping_webhook(Actor{"test", epoch}, "ops"));
  age("UPDATE webhook_deliveries SET state = 'delivered', finished_at = now() - interval '40 days',"
      " created_at = now() - interval '40 days' WHERE id = (SELECT min(id) FROM webhook_deliveries)");
  ASSERT_TRUE(admin.ping_webhook(Actor{"test", epoch}, "ops"));
  ASSERT_TRUE(admin.ping_webhook(Actor{"test", epoch}, "ops2"));
  age("UPDATE webhook_deliveries SET created_at = now() - interval '40 days'"
      " WHERE id = (SELECT max(id) FROM webhook_deliveries)");  // old, but still pending
  auto p = leader.prune(epoch, 100);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->webhook_deliveries, 1);
  EXPECT_EQ(text("SELECT string_agg(state, ' ' ORDER BY id) FROM webhook_deliveries"), "pending pending");
}

TEST_F(WebhooksStoreTest, TheApiSeesNoSecretAndEveryChangeIsAudited) {
  hook("ops", {"run_failed"});
  hook("ops", {"run_failed", "dead_letter"});
  auto page = admin.list_webhooks(10, std::nullopt, std::nullopt);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->items_json.find("secret-of"), std::string::npos) << page->items_json;
  const auto items = json::parse(page->items_json).as_array();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].at("version").as_int64(), 2);
  EXPECT_EQ(items[0].at("secret_sha256").as_string(),
            text("SELECT encode(sha256('secret-of-ops-0123456789'::bytea), 'hex')"));
  auto stored = admin.webhook_definition("ops");
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ((*stored)->definition.events, (std::vector<std::string>{"run_failed", "dead_letter"}));
  EXPECT_EQ((*stored)->definition.secret, "");

  ASSERT_TRUE(admin.ping_webhook(Actor{"test", epoch}, "ops"));
  auto deliveries = admin.list_webhook_deliveries("ops", std::string("pending"), 10, std::nullopt);
  ASSERT_TRUE(deliveries && *deliveries);
  EXPECT_EQ(json::parse((*deliveries)->items_json).as_array().size(), 1u);
  EXPECT_FALSE(*admin.list_webhook_deliveries("nope", std::nullopt, 10, std::nullopt));

  auto del = admin.delete_webhook(Actor{"test", epoch}, "ops");
  ASSERT_TRUE(del && del->outcome == AdminOutcome::applied);
  EXPECT_EQ(text("SELECT count(*) FROM webhook_deliveries"), "0") << "its deliveries go with it";
  EXPECT_EQ(admin.delete_webhook(Actor{"test", epoch}, "ops")->outcome, AdminOutcome::not_found);
  EXPECT_EQ(text("SELECT string_agg(action, ' ' ORDER BY id) FROM audit_log WHERE subject = 'webhook:ops'"),
            "webhook.create webhook.update webhook.ping webhook.delete");
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE details::text LIKE '%secret-of%'"), "0");
}

}  // namespace
