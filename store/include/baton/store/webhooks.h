#pragma once
// Outgoing notifications (schemas/0038, docs/webhooks.md): what a webhook
// is as the admin API writes it, and the port through which the leader's
// sender takes queued deliveries and records how each attempt went. The
// deliveries themselves are queued by the database, in the transaction of
// the event they tell of; nothing here creates one except a ping.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/base/result.h"

namespace baton::store {

/// The kinds of event a webhook may list (a `ping` is sent on request to
/// any webhook).
inline const std::vector<std::string>& webhook_event_kinds() {
  static const std::vector<std::string> kinds{"dead_letter", "run_failed", "failures_in_a_row", "leader_changed",
                                              "invariant_violated"};
  return kinds;
}

/// A webhook as written through the API.
struct WebhookDefinition {
  std::string name;
  std::string url;  ///< https://HOST[:PORT]/PATH
  std::vector<std::string> events;
  std::vector<std::string> jobs;  ///< empty: every job
  int failures_in_a_row = 3;      ///< the threshold of a failures_in_a_row event
  int max_attempts = 12;          ///< attempts before a delivery is given up (failed)
  bool enabled = true;
  std::string secret;  ///< the HMAC key; never read back
};

/// A webhook as stored: its definition without the secret, and the secret's
/// SHA-256 (hex) so that a change of secret can be told.
struct StoredWebhook {
  WebhookDefinition definition;
  std::string secret_sha256;
  std::int64_t version = 0;
};

/// One attempt of one delivery, as claimed by the sender.
struct ClaimedDelivery {
  std::int64_t id = 0;
  std::string webhook;
  std::string url;
  std::string secret;
  std::string event_id;
  std::string kind;
  std::string body;  ///< the exact JSON to send, the same on every attempt
  int attempt = 1;   ///< this attempt's number, from 1
  int max_attempts = 1;
};

struct ClaimedDeliveries {
  Epoch current_epoch{0};  ///< not the claimer's: nothing was claimed
  std::vector<ClaimedDelivery> deliveries;
};

/// How one attempt ended, to be recorded.
struct DeliveryRecord {
  enum class Outcome { delivered, retry, failed };
  std::int64_t id = 0;
  int attempt = 1;
  Outcome outcome = Outcome::retry;
  std::optional<int> status;  ///< the receiver's HTTP status, when it answered
  std::string error;          ///< why it did not count, in words ("" when delivered)
  Millis retry_in{0};         ///< retry: when the next attempt may be made
};

/// "delivered", "retry" or "failed": the word the queue and the log use.
inline const char* to_string(DeliveryRecord::Outcome o) {
  switch (o) {
    case DeliveryRecord::Outcome::delivered: return "delivered";
    case DeliveryRecord::Outcome::failed: return "failed";
    case DeliveryRecord::Outcome::retry: break;
  }
  return "retry";
}

/// The leader's side of the delivery queue: one connection of its own, off
/// the control loop.
class WebhookOutbox {
 public:
  virtual ~WebhookOutbox() = default;
  /// Takes up to `limit` pending deliveries that are due and not claimed,
  /// at most one per webhook (the oldest due) and none of a webhook with a
  /// claim of this epoch still out, the webhooks whose oldest is oldest
  /// first, for `lease` (another claim may take one again after),
  /// counting the attempt. Only while `epoch` is the current epoch: a node
  /// that no longer leads claims nothing.
  virtual Result<ClaimedDeliveries> claim_deliveries(Epoch epoch, int limit, Millis lease) = 0;
  /// Records how an attempt ended; false when the delivery is no longer at
  /// that attempt (claimed again after the lease ran out, or redelivered).
  virtual Result<bool> record_delivery(const DeliveryRecord& r) = 0;
  /// Waits up to `max` for a queued delivery's notification (true) or none.
  virtual Result<bool> await_deliveries(Millis max) = 0;
};

}  // namespace baton::store
