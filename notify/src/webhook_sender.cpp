#include "baton/notify/webhook_sender.h"

#include <spdlog/spdlog.h>

#include <future>
#include <vector>

#include "baton/base/json_text.h"

namespace baton::notify {

WebhookSender::WebhookSender(store::WebhookOutbox& outbox, Post post, std::function<std::int64_t()> unix_now,
                             SenderSettings settings)
    : outbox_(outbox), post_(std::move(post)), unix_now_(std::move(unix_now)), settings_(std::move(settings)) {}

WebhookSender::Pass WebhookSender::pass(Epoch epoch) {
  Pass out;
  auto claimed = outbox_.claim_deliveries(epoch, settings_.batch, settings_.lease());
  if (!claimed) {
    out.error = claimed.error().message;
    return out;
  }
  if (claimed->current_epoch != epoch) {
    out.fenced = true;
    return out;
  }
  // One delivery per webhook in a claim (the store's rule), so the POSTs
  // go to different receivers: sent at once, a slow one holds only its
  // own; recorded afterwards on this thread, in the claim's order.
  std::vector<std::future<HttpAnswer>> answers;
  const std::int64_t now = unix_now_();
  for (const auto& d : claimed->deliveries)
    answers.push_back(std::async(std::launch::async, [this, request = delivery_request(d, now, settings_.user_agent)] {
      return post_(request);
    }));
  for (std::size_t i = 0; i < claimed->deliveries.size(); ++i) {
    const auto& d = claimed->deliveries[i];
    ++out.attempted;
    const HttpAnswer answer = answers[i].get();
    const store::DeliveryRecord record = judge(d, answer);
    if (record.outcome == store::DeliveryRecord::Outcome::delivered) ++out.delivered;
    auto recorded = outbox_.record_delivery(record);
    const auto level =
        record.outcome == store::DeliveryRecord::Outcome::delivered ? spdlog::level::info : spdlog::level::warn;
    spdlog::log(level,
                "webhook_delivery webhook={} delivery={} event={} kind={} attempt={} of={} outcome={} status={} "
                "retry_in_ms={} epoch={} error={}{}",
                json_quote(d.webhook), d.id, d.event_id, json_quote(d.kind), d.attempt, d.max_attempts,
                store::to_string(record.outcome), record.status ? std::to_string(*record.status) : "none",
                record.retry_in.count(), epoch.value, json_quote(record.error),
                !recorded    ? " not_recorded=" + json_quote(recorded.error().message)
                : !*recorded ? " not_recorded=\"claimed again or redelivered meanwhile\""
                             : std::string());
  }
  return out;
}

}  // namespace baton::notify
