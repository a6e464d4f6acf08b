#include "baton/notify/webhook_sender.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

#include "baton/notify/signature.h"

namespace baton::notify {
namespace {

/// The queue as the sender sees it: what a claim returns, what was recorded.
struct FakeOutbox final : store::WebhookOutbox {
  Epoch current{4};
  std::deque<store::ClaimedDelivery> queued;
  std::vector<store::DeliveryRecord> recorded;
  std::vector<std::pair<int, Millis>> claims;  ///< (limit, lease)
  bool unavailable = false;

  Result<store::ClaimedDeliveries> claim_deliveries(Epoch epoch, int limit, Millis lease) override {
    if (unavailable) return make_error(Errc::db_unavailable, "database away");
    claims.emplace_back(limit, lease);
    store::ClaimedDeliveries out{current, {}};
    if (epoch != current) return out;
    while (!queued.empty() && static_cast<int>(out.deliveries.size()) < limit) {
      out.deliveries.push_back(queued.front());
      queued.pop_front();
    }
    return out;
  }
  Result<bool> record_delivery(const store::DeliveryRecord& r) override {
    recorded.push_back(r);
    return true;
  }
  Result<bool> await_deliveries(Millis) override { return false; }
};

store::ClaimedDelivery queued(std::int64_t id, int attempt = 1) {
  store::ClaimedDelivery d;
  d.id = id;
  d.webhook = "ops";
  d.url = "https://127.0.0.1:1/hook";
  d.secret = "0123456789abcdef";
  d.event_id = "e-" + std::to_string(id);
  d.kind = "run_failed";
  d.body = "{\"id\":\"e-" + std::to_string(id) + "\"}";
  d.attempt = attempt;
  d.max_attempts = 3;
  return d;
}

TEST(WebhookSender, SendsWhatItClaimsAndRecordsEachAnswer) {
  FakeOutbox outbox;
  outbox.queued = {queued(1), queued(2), queued(3, 3)};
  std::vector<OutgoingPost> sent;  // the POSTs come from several threads
  std::mutex sent_mutex;
  std::map<std::string, HttpAnswer> answers{{"{\"id\":\"e-1\"}", {200, {}}},
                                            {"{\"id\":\"e-2\"}", {503, {}}},
                                            {"{\"id\":\"e-3\"}", {std::nullopt, "connect: refused"}}};
  WebhookSender sender(
      outbox,
      [&](const OutgoingPost& p) {
        std::lock_guard lock(sent_mutex);
        sent.push_back(p);
        return answers.at(p.body);
      },
      [] { return std::int64_t{1700000000}; }, SenderSettings{});
  auto pass = sender.pass(Epoch{4});
  EXPECT_FALSE(pass.fenced);
  EXPECT_EQ(pass.attempted, 3);
  EXPECT_EQ(pass.delivered, 1);
  ASSERT_EQ(sent.size(), 3u);
  ASSERT_EQ(outbox.recorded.size(), 3u);
  EXPECT_EQ(outbox.recorded[0].outcome, store::DeliveryRecord::Outcome::delivered);
  EXPECT_EQ(outbox.recorded[1].outcome, store::DeliveryRecord::Outcome::retry);
  EXPECT_EQ(outbox.recorded[1].retry_in, retry_delay(1));
  EXPECT_EQ(outbox.recorded[2].outcome, store::DeliveryRecord::Outcome::failed);  // its last attempt
  EXPECT_EQ(outbox.recorded[2].attempt, 3);
  // Each request is signed at the sender's time.
  std::map<std::string, std::string> h(sent[0].headers.begin(), sent[0].headers.end());
  EXPECT_EQ(h["Baton-Signature"], signature_header("0123456789abcdef", 1700000000, sent[0].body));
  // The claim's lease covers a whole batch of POSTs at their timeout.
  ASSERT_EQ(outbox.claims.size(), 1u);
  EXPECT_EQ(outbox.claims[0].first, SenderSettings{}.batch);
  EXPECT_GE(outbox.claims[0].second, SenderSettings{}.timeout * SenderSettings{}.batch);
}

// A claim's deliveries are for different webhooks (the store's rule):
// their POSTs go at once, so a receiver that takes its time holds only its
// own (security review N-L1). Here the slow receiver answers only once the
// fast one has been sent to; sent one after another, it would wait out its
// 5 s and the fast POST would come after.
TEST(WebhookSender, APassSendsToEachWebhookAtOnceSoASlowReceiverHoldsOnlyItsOwn) {
  FakeOutbox outbox;
  auto slow = queued(1), fast = queued(2);
  slow.webhook = "slow";
  fast.webhook = "fast";
  outbox.queued = {slow, fast};
  std::mutex m;
  std::condition_variable cv;
  bool fast_sent = false, slow_saw_fast = false;
  WebhookSender sender(
      outbox,
      [&](const OutgoingPost& p) {
        std::unique_lock lock(m);
        if (p.body == slow.body) {
          slow_saw_fast = cv.wait_for(lock, std::chrono::seconds(5), [&] { return fast_sent; });
          return HttpAnswer{200, {}};
        }
        fast_sent = true;
        cv.notify_all();
        return HttpAnswer{200, {}};
      },
      [] { return std::int64_t{1700000000}; }, SenderSettings{});
  auto pass = sender.pass(Epoch{4});
  EXPECT_EQ(pass.delivered, 2);
  EXPECT_TRUE(slow_saw_fast) << "the fast receiver's POST waited behind the slow one's";
  ASSERT_EQ(outbox.recorded.size(), 2u);
  EXPECT_EQ(outbox.recorded[0].id, 1) << "recorded in the claim's order";
}

TEST(WebhookSender, SendsNothingOnceAnotherEpochIsCurrent) {
  FakeOutbox outbox;
  outbox.current = Epoch{5};
  outbox.queued = {queued(1)};
  int posts = 0;
  WebhookSender sender(
      outbox,
      [&](const OutgoingPost&) {
        ++posts;  // (never called here)
        return HttpAnswer{200, {}};
      },
      [] { return std::int64_t{0}; }, SenderSettings{});
  auto pass = sender.pass(Epoch{4});
  EXPECT_TRUE(pass.fenced);
  EXPECT_EQ(posts, 0);
  EXPECT_TRUE(outbox.recorded.empty());
}

TEST(WebhookSender, ADatabaseAwayIsAnErrorNotAPost) {
  FakeOutbox outbox;
  outbox.unavailable = true;
  int posts = 0;
  WebhookSender sender(
      outbox,
      [&](const OutgoingPost&) {
        ++posts;  // (never called here)
        return HttpAnswer{200, {}};
      },
      [] { return std::int64_t{0}; }, SenderSettings{});
  auto pass = sender.pass(Epoch{4});
  ASSERT_TRUE(pass.error);
  EXPECT_EQ(*pass.error, "database away");
  EXPECT_EQ(posts, 0);
}

}  // namespace
}  // namespace baton::notify
