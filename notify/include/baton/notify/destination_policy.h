#pragma once
// Where a webhook may be sent (docs/webhooks.md, "Where deliveries may
// go"; security review N-L2). An `admin` defines webhooks, and the leader
// POSTs from its own place in the network: without a policy a webhook is
// a way to make the leader reach this host's own services, the cloud's
// instance-metadata address, or the node's own API. The receiver's
// certificate must still verify, which keeps what such a POST reaches
// small; this refuses the addresses no receiver should have, judged on
// each address a host name resolves to at the time of sending (a name
// that resolves elsewhere later is judged again then).
#include <cstdint>
#include <string>
#include <vector>

namespace baton::notify {

struct DestinationPolicy {
  bool allow_loopback = false;    ///< webhooks.allow_loopback: 127.0.0.0/8, ::1 (this host)
  bool allow_link_local = false;  ///< webhooks.allow_link_local: 169.254.0.0/16, fe80::/10
  /// This node's own endpoints (`listen`, `advertise`) as HOST:PORT: a
  /// webhook never goes to the node's own port, whatever is allowed.
  std::vector<std::string> own_endpoints;
};

/// Why a POST to `address` (an IP address, as resolved) on `port` is
/// refused, naming the setting that would allow it where one does; ""
/// when it may go. Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7)
/// are allowed: on premises, that is where receivers are.
std::string destination_refusal(const std::string& address, std::uint16_t port, const DestinationPolicy& policy);

}  // namespace baton::notify
