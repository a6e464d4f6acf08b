#pragma once
// The leader's webhook sender (docs/webhooks.md): a thread beside the
// control loop, never on it, that takes queued deliveries from the
// database, POSTs each and records how it went. It claims only while its
// epoch is the current one, so a node that no longer leads sends nothing
// new; the next leader claims again at once what an earlier epoch claimed
// (its attempt may have died unrecorded), with the same event id.
//
// A claim holds at most one delivery per webhook, and none of a webhook
// whose last claim is still out (security review N-L1): the POSTs of a
// pass go to different receivers and are sent at once, so a receiver that
// answers slowly delays its own deliveries, not the others' (a pass still
// ends with its slowest POST, at most webhooks.timeout).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "baton/base/ids.h"
#include "baton/notify/delivery_policy.h"
#include "baton/store/webhooks.h"

namespace baton::notify {

struct SenderSettings {
  int batch = 8;          ///< deliveries claimed at once (sent one after another)
  Millis timeout{10000};  ///< of one POST, from connect to answer
  std::string user_agent = "baton-webhooks";
  /// A claim's lease: every POST of a batch may take its timeout.
  Millis lease() const { return timeout * batch + Millis{30000}; }
};

class WebhookSender {
 public:
  using Post = std::function<HttpAnswer(const OutgoingPost&)>;
  WebhookSender(store::WebhookOutbox& outbox, Post post, std::function<std::int64_t()> unix_now,
                SenderSettings settings);

  struct Pass {
    bool fenced = false;  ///< another epoch is current: this sender is done
    int attempted = 0;
    int delivered = 0;
    std::optional<std::string> error;  ///< the database's, when it could not claim
  };
  /// Claims what is due under `epoch` (one per webhook), sends it (the
  /// POSTs at once: `post` is called from several threads) and records
  /// each outcome.
  Pass pass(Epoch epoch);

  const SenderSettings& settings() const { return settings_; }

 private:
  store::WebhookOutbox& outbox_;
  Post post_;
  std::function<std::int64_t()> unix_now_;
  SenderSettings settings_;
};

}  // namespace baton::notify
