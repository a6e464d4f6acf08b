#include "baton/notify/delivery_policy.h"

#include <algorithm>

#include "baton/notify/signature.h"

namespace baton::notify {

OutgoingPost delivery_request(const store::ClaimedDelivery& d, std::int64_t unix_now, std::string_view user_agent) {
  OutgoingPost p;
  p.url = d.url;
  p.body = d.body;
  p.headers = {{"Content-Type", "application/json"},
               {"User-Agent", std::string(user_agent)},
               {"Baton-Event-Id", d.event_id},
               {"Baton-Event-Kind", d.kind},
               {"Baton-Delivery-Attempt", std::to_string(d.attempt)},
               {"Baton-Signature", signature_header(d.secret, unix_now, d.body)}};
  return p;
}

Millis retry_delay(int attempt) {
  constexpr Millis first{5000}, most{3600 * 1000};
  Millis d = first;
  for (int i = 1; i < attempt && d < most; ++i) d *= 2;
  return std::min(d, most);
}

store::DeliveryRecord judge(const store::ClaimedDelivery& d, const HttpAnswer& answer) {
  using Outcome = store::DeliveryRecord::Outcome;
  store::DeliveryRecord r;
  r.id = d.id;
  r.attempt = d.attempt;
  r.status = answer.status;
  if (answer.status && *answer.status >= 200 && *answer.status < 300) {
    r.outcome = Outcome::delivered;
    return r;
  }
  if (!answer.status)
    r.error = answer.error.empty() ? "no answer" : answer.error;
  else if (*answer.status >= 300 && *answer.status < 400)
    r.error = "HTTP " + std::to_string(*answer.status) + ": a redirect is not followed (set the url it names)";
  else
    r.error = "HTTP " + std::to_string(*answer.status);
  if (answer.status == 410) {
    r.outcome = Outcome::failed;
    r.error += " Gone: the receiver takes no more of it";
    return r;
  }
  if (d.attempt >= d.max_attempts) {
    r.outcome = Outcome::failed;
    r.error += " (attempt " + std::to_string(d.attempt) + " of " + std::to_string(d.max_attempts) + ": given up)";
    return r;
  }
  r.outcome = Outcome::retry;
  r.retry_in = retry_delay(d.attempt);
  return r;
}

}  // namespace baton::notify
