#pragma once
// One attempt of a webhook delivery, as pure decisions (docs/webhooks.md):
// the request it sends and what the receiver's answer makes of the
// delivery. No I/O; the sender (webhook_sender.h) runs them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baton/base/clock.h"
#include "baton/store/webhooks.h"

namespace baton::notify {

/// An HTTPS POST to make.
struct OutgoingPost {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

/// How a POST ended: the receiver's status, or no answer and why.
struct HttpAnswer {
  std::optional<int> status;
  std::string error;  ///< set when status is not
};

/// The request of an attempt made at `unix_now`: the body as queued, the
/// event's id and kind, the attempt's number and its signature.
OutgoingPost delivery_request(const store::ClaimedDelivery& d, std::int64_t unix_now, std::string_view user_agent);

/// How long after failed attempt number `attempt` (from 1) the next one
/// may be made: 5 s, doubling, at most an hour.
Millis retry_delay(int attempt);

/// What an answer makes of the delivery: delivered on any 2xx; given up on
/// 410 Gone or when this was its last attempt; else retried after
/// retry_delay. A redirect is not followed (the url is where it receives).
store::DeliveryRecord judge(const store::ClaimedDelivery& d, const HttpAnswer& answer);

}  // namespace baton::notify
