#pragma once
// WebhookOutbox on PostgreSQL: the queue of deliveries (schemas/0038) as the
// leader's sender takes it, on a connection of its own.
#include <string>

#include "baton/store/webhooks.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

/// The channel a queued delivery NOTIFYs at commit (schemas/0038).
inline constexpr const char* webhooks_channel = "baton_webhooks";

class PgWebhookOutbox final : public WebhookOutbox {
 public:
  PgWebhookOutbox(const std::string& url, const std::string& application_name);

  Result<ClaimedDeliveries> claim_deliveries(Epoch epoch, int limit, Millis lease) override;
  Result<bool> record_delivery(const DeliveryRecord& r) override;
  Result<bool> await_deliveries(Millis max) override;

 private:
  PgSession session_;
};

}  // namespace baton::store::pg
