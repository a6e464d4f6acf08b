#include "baton/notify/delivery_policy.h"

#include <gtest/gtest.h>

#include "baton/notify/signature.h"

namespace baton::notify {
namespace {

using Outcome = store::DeliveryRecord::Outcome;

store::ClaimedDelivery delivery(int attempt, int max_attempts = 5) {
  store::ClaimedDelivery d;
  d.id = 7;
  d.webhook = "ops";
  d.url = "https://hooks.example/baton";
  d.secret = "a-secret-of-sixteen";
  d.event_id = "0b6c1f2e-0000-4000-8000-000000000001";
  d.kind = "dead_letter";
  d.body = R"({"id":"0b6c1f2e-0000-4000-8000-000000000001","kind":"dead_letter"})";
  d.attempt = attempt;
  d.max_attempts = max_attempts;
  return d;
}

TEST(Signature, IsHmacSha256AsRfc4231SaysIt) {
  // RFC 4231, test case 2.
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Signature, SignsTheTimeAndTheBodyTogether) {
  const std::string h = signature_header("Jefe", 1700000000, "{}");
  EXPECT_EQ(h, "t=1700000000,v1=" + hmac_sha256_hex("Jefe", "1700000000.{}"));
  // Another time or another body is another signature: a receiver that
  // checks both cannot be handed an old delivery as new.
  EXPECT_NE(h, signature_header("Jefe", 1700000001, "{}"));
  EXPECT_NE(h, signature_header("Jefe", 1700000000, "{ }"));
  EXPECT_NE(h, signature_header("Jeff", 1700000000, "{}"));
}

TEST(DeliveryRequest, CarriesTheBodyAsQueuedWithItsEventIdAndSignature) {
  const auto d = delivery(3);
  const OutgoingPost p = delivery_request(d, 1700000000, "baton-webhooks/test");
  EXPECT_EQ(p.url, d.url);
  EXPECT_EQ(p.body, d.body);
  std::map<std::string, std::string> h(p.headers.begin(), p.headers.end());
  EXPECT_EQ(h["Content-Type"], "application/json");
  EXPECT_EQ(h["Baton-Event-Id"], d.event_id);
  EXPECT_EQ(h["Baton-Event-Kind"], "dead_letter");
  EXPECT_EQ(h["Baton-Delivery-Attempt"], "3");
  EXPECT_EQ(h["Baton-Signature"], signature_header(d.secret, 1700000000, d.body));
  EXPECT_EQ(h["User-Agent"], "baton-webhooks/test");
}

TEST(RetryDelay, DoublesFromFiveSecondsUpToAnHour) {
  EXPECT_EQ(retry_delay(1), Millis{5000});
  EXPECT_EQ(retry_delay(2), Millis{10000});
  EXPECT_EQ(retry_delay(3), Millis{20000});
  EXPECT_EQ(retry_delay(10), Millis{2560000});
  EXPECT_EQ(retry_delay(11), Millis{3600000});
  EXPECT_EQ(retry_delay(100), Millis{3600000});
}

TEST(Judge, AnyTwoHundredDelivers) {
  for (int status : {200, 201, 202, 204, 299}) {
    auto r = judge(delivery(1), HttpAnswer{status, {}});
    EXPECT_EQ(r.outcome, Outcome::delivered) << status;
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.status, status);
    EXPECT_EQ(r.id, 7);
    EXPECT_EQ(r.attempt, 1);
  }
}

TEST(Judge, AnythingElseIsRetriedWithBackoffUntilTheLastAttempt) {
  auto r = judge(delivery(2), HttpAnswer{503, {}});
  EXPECT_EQ(r.outcome, Outcome::retry);
  EXPECT_EQ(r.retry_in, retry_delay(2));
  EXPECT_EQ(r.error, "HTTP 503");

  r = judge(delivery(1), HttpAnswer{std::nullopt, "connect: 127.0.0.1:9: Connection refused"});
  EXPECT_EQ(r.outcome, Outcome::retry);
  EXPECT_FALSE(r.status);
  EXPECT_EQ(r.error, "connect: 127.0.0.1:9: Connection refused");

  r = judge(delivery(1), HttpAnswer{301, {}});
  EXPECT_EQ(r.outcome, Outcome::retry);
  EXPECT_NE(r.error.find("redirect is not followed"), std::string::npos) << r.error;

  r = judge(delivery(5, 5), HttpAnswer{500, {}});
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.error, "HTTP 500 (attempt 5 of 5: given up)");
}

TEST(Judge, GoneGivesUpAtOnce) {
  auto r = judge(delivery(1), HttpAnswer{410, {}});
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.error.find("410"), std::string::npos);
}

}  // namespace
}  // namespace baton::notify
