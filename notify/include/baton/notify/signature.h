#pragma once
// The signature of a webhook delivery (docs/webhooks.md, "Checking a
// delivery"): HMAC-SHA256 with the webhook's secret over "<t>.<body>",
// where t is the Unix time of the attempt, sent as
//   Baton-Signature: t=<t>,v1=<hex>
// A receiver recomputes it over the bytes it received and refuses a t too
// far from its own clock, so a captured delivery cannot be replayed later.
#include <cstdint>
#include <string>
#include <string_view>

namespace baton::notify {

/// HMAC-SHA256 of `message` under `key`, as lowercase hex.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

/// The Baton-Signature header value for a body sent at `unix_seconds`.
std::string signature_header(std::string_view secret, std::int64_t unix_seconds, std::string_view body);

}  // namespace baton::notify
