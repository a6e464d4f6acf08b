// FinishDelivery: each rule of a finish's way from its attempt's end to the
// leader's ack, fed inputs with a hand-moved monotonic time, asserted on the
// effects.
#include "baton/worker_core/finish_delivery.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::worker_core;
using namespace std::chrono_literals;

namespace {

MonoTime delivery_at(std::chrono::milliseconds t) { return MonoTime{t}; }

protocol::Finish finish(std::int64_t run, int attempt = 1) {
  protocol::Finish f;
  f.ref = {run, attempt, "token-" + std::to_string(run)};
  f.outcome = protocol::Outcome::succeeded;
  f.exit_code = 0;
  return f;
}

template <class T>
std::vector<T> only(const std::vector<DeliveryEffect>& effects) {
  std::vector<T> out;
  for (const auto& e : effects)
    if (const auto* x = std::get_if<T>(&e)) out.push_back(*x);
  return out;
}

std::vector<std::int64_t> sent_runs(const std::vector<DeliveryEffect>& effects) {
  std::vector<std::int64_t> out;
  for (const auto& s : only<SendFinish>(effects)) out.push_back(s.finish.ref.run_id);
  return out;
}

}  // namespace

TEST(FinishDelivery, AFinishIsWrittenBeforeItIsSentAndListedAllTheWay) {
  FinishDelivery d;
  d.attached();
  d.ended(finish(1));
  auto e = d.take_effects();
  ASSERT_EQ(only<WriteFinishes>(e).size(), 1u);
  EXPECT_EQ(only<WriteFinishes>(e)[0].group[0].ref.run_id, 1);
  EXPECT_TRUE(sent_runs(e).empty()) << "not sent while its write is out";
  EXPECT_EQ(d.state(finish(1).ref), FinishState::writing);
  EXPECT_EQ(d.unacknowledged(), std::vector<protocol::AttemptRef>{finish(1).ref}) << "listed while writing";
  EXPECT_TRUE(d.durable().empty());
  d.tick(delivery_at(5000ms));
  EXPECT_TRUE(sent_runs(d.take_effects()).empty()) << "no resend of a finish not yet written";

  d.written({finish(1)}, true, delivery_at(20ms));
  EXPECT_EQ(sent_runs(d.take_effects()), std::vector<std::int64_t>{1});
  EXPECT_EQ(d.state(finish(1).ref), FinishState::durable);
  EXPECT_EQ(d.durable().size(), 1u);
  EXPECT_FALSE(d.delivered());
}

TEST(FinishDelivery, DetachedNothingIsSentAndAWelcomeSendsEveryDurableFinish) {
  FinishDelivery d;
  d.ended(finish(1));
  d.ended(finish(2));
  d.take_effects();
  d.written({finish(1)}, true, delivery_at(5ms));
  d.tick(delivery_at(10000ms));
  EXPECT_TRUE(sent_runs(d.take_effects()).empty()) << "never sent while detached";
  d.attached();
  EXPECT_EQ(sent_runs(d.take_effects()), std::vector<std::int64_t>{1}) << "the durable one, not the one being written";
  d.detached();
  d.attached();
  EXPECT_EQ(sent_runs(d.take_effects()), std::vector<std::int64_t>{1})
      << "every welcome: a dead leader may not have it";
}

TEST(FinishDelivery, ADurableFinishUnacknowledgedIsSentAgainAfterTheResendInterval) {
  FinishDelivery d;
  d.attached();
  d.ended(finish(1));
  d.written({finish(1)}, true, delivery_at(1000ms));
  d.take_effects();
  d.tick(delivery_at(3500ms));  // the resend clock's first round: but written only 2.5 s ago
  EXPECT_TRUE(sent_runs(d.take_effects()).empty());
  d.tick(delivery_at(4000ms));  // the round is every finish_resend_after
  EXPECT_TRUE(sent_runs(d.take_effects()).empty());
  d.tick(delivery_at(6600ms));
  EXPECT_EQ(sent_runs(d.take_effects()), std::vector<std::int64_t>{1});
  d.detached();
  d.tick(delivery_at(20000ms));
  EXPECT_TRUE(sent_runs(d.take_effects()).empty()) << "resent only while attached";
}

TEST(FinishDelivery, AFinishTheOutboxCouldNotWriteIsSentAnywayAndWrittenAgain) {
  FinishDelivery d;
  d.attached();
  d.ended(finish(1));
  d.take_effects();
  d.written({finish(1)}, false, delivery_at(10ms));
  auto e = d.take_effects();
  EXPECT_EQ(sent_runs(e), std::vector<std::int64_t>{1}) << "sent anyway";
  EXPECT_EQ(d.state(finish(1).ref), FinishState::undurable);
  EXPECT_TRUE(d.durable().empty());
  EXPECT_EQ(d.unacknowledged().size(), 1u) << "still listed: no leader declares it lost";
  d.tick(delivery_at(1500ms));
  e = d.take_effects();
  ASSERT_EQ(only<WriteFinishes>(e).size(), 1u) << "written again";
  d.tick(delivery_at(2000ms));
  EXPECT_TRUE(only<WriteFinishes>(d.take_effects()).empty()) << "at most every outbox_retry_after";
  d.tick(delivery_at(3100ms));
  e = d.take_effects();
  EXPECT_EQ(only<WriteFinishes>(e).size(), 1u);
  EXPECT_EQ(sent_runs(e), std::vector<std::int64_t>{1}) << "an undurable finish is resent with every round";
  d.written({finish(1)}, true, delivery_at(3200ms));
  d.take_effects();
  EXPECT_EQ(d.state(finish(1).ref), FinishState::durable);
  d.tick(delivery_at(4500ms));
  EXPECT_TRUE(only<WriteFinishes>(d.take_effects()).empty()) << "durable now: no more retries";
  d.written({finish(1)}, false, delivery_at(4600ms));
  EXPECT_EQ(d.state(finish(1).ref), FinishState::durable) << "a later failed retry does not undo a write";
}

TEST(FinishDelivery, AnAckForgetsTheFinishEverywhereAndWhatComesAfterItChangesNothing) {
  FinishDelivery d;
  d.attached();
  d.ended(finish(1));
  d.ended(finish(2));
  d.written({finish(1), finish(2)}, false, delivery_at(1ms));
  d.take_effects();
  d.acked(finish(1).ref);
  auto e = d.take_effects();
  ASSERT_EQ(only<ForgetFinish>(e).size(), 1u);
  EXPECT_EQ(only<ForgetFinish>(e)[0].ref, finish(1).ref);
  EXPECT_EQ(d.unacknowledged(), std::vector<protocol::AttemptRef>{finish(2).ref});
  d.written({finish(1)}, true, delivery_at(2ms));  // the retry that was already queued
  EXPECT_TRUE(sent_runs(d.take_effects()).empty());
  EXPECT_FALSE(d.state(finish(1).ref).has_value());
  d.acked(finish(9).ref);  // a previous incarnation's, or a duplicate ack
  EXPECT_EQ(only<ForgetFinish>(d.take_effects()).size(), 1u) << "forgotten in the outbox all the same";
  EXPECT_FALSE(d.delivered());
  d.acked(finish(2).ref);
  EXPECT_TRUE(d.delivered()) << "a drain is done only now";
}

TEST(FinishDelivery, FinishesAPreviousIncarnationLeftAreListedAndSentAtTheWelcome) {
  FinishDelivery d;
  d.loaded({finish(7), finish(8, 2)}, delivery_at(0ms));
  EXPECT_EQ(d.unacknowledged().size(), 2u);
  EXPECT_TRUE(d.take_effects().empty()) << "already on disk: nothing to write";
  d.attached();
  EXPECT_EQ(sent_runs(d.take_effects()), (std::vector<std::int64_t>{7, 8}));
}

TEST(FinishDelivery, AnAttemptEndsOnce) {
  FinishDelivery d;
  d.attached();
  d.ended(finish(1));
  d.written({finish(1)}, true, delivery_at(1ms));
  d.take_effects();
  auto second = finish(1);
  second.outcome = protocol::Outcome::failed;
  d.ended(second);
  EXPECT_TRUE(d.take_effects().empty());
  EXPECT_EQ(d.durable().at(0).outcome, protocol::Outcome::succeeded) << "the first report stands";
}
