#include "baton/notify/destination_policy.h"

#include <boost/asio/ip/address.hpp>

namespace baton::notify {

namespace ip = boost::asio::ip;

namespace {

/// An IPv4 address written as IPv6 (::ffff:a.b.c.d) is judged as IPv4.
ip::address unmapped(const ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  return a;
}

bool is_loopback(const ip::address& a) {
  // 0.0.0.0/8 and :: reach this host too when connected to.
  if (a.is_v4()) return a.is_loopback() || (a.to_v4().to_uint() >> 24) == 0;
  return a.is_loopback() || a.is_unspecified();
}

bool is_link_local(const ip::address& a) {
  if (a.is_v4()) return (a.to_v4().to_uint() >> 16) == 0xA9FE;  // 169.254.0.0/16
  return a.to_v6().is_link_local();
}

bool is_multicast_or_broadcast(const ip::address& a) {
  if (a.is_v4()) return a.is_multicast() || a.to_v4() == ip::address_v4::broadcast();
  return a.is_multicast();
}

/// HOST:PORT or [HOST]:PORT split; two empty strings when it is not one.
std::pair<std::string, std::string> split_endpoint(const std::string& ep) {
  if (!ep.empty() && ep.front() == '[') {
    const auto close = ep.find(']');
    if (close == std::string::npos || close + 1 >= ep.size() || ep[close + 1] != ':') return {};
    return {ep.substr(1, close - 1), ep.substr(close + 2)};
  }
  const auto colon = ep.rfind(':');
  if (colon == std::string::npos) return {};
  return {ep.substr(0, colon), ep.substr(colon + 1)};
}

/// Whether `a`:`port` is one of this node's own endpoints: the same
/// address and port, or the same port on this host where the node listens
/// on every address (0.0.0.0, ::) or on a loopback one.
bool is_own(const ip::address& a, std::uint16_t port, const std::vector<std::string>& own) {
  for (const auto& ep : own) {
    const auto [host, port_text] = split_endpoint(ep);
    if (port_text != std::to_string(port)) continue;
    boost::system::error_code ec;
    const auto mine = ip::make_address(host, ec);
    if (ec) continue;  // a host name: its addresses are not known here
    const auto m = unmapped(mine);
    if (m == a) return true;
    if ((m.is_unspecified() || is_loopback(m)) && is_loopback(a)) return true;
  }
  return false;
}

}  // namespace

std::string destination_refusal(const std::string& address, std::uint16_t port, const DestinationPolicy& policy) {
  boost::system::error_code ec;
  const auto parsed = ip::make_address(address, ec);
  if (ec) return "'" + address + "' is not an IP address";
  const auto a = unmapped(parsed);
  const std::string where = a.to_string() + ":" + std::to_string(port);
  if (is_own(a, port, policy.own_endpoints)) return where + " is this node's own port";
  if (is_multicast_or_broadcast(a)) return where + " is a multicast or broadcast address";
  if (is_loopback(a) && !policy.allow_loopback)
    return where + " is a loopback address (this host), refused unless webhooks.allow_loopback is true";
  if (is_link_local(a) && !policy.allow_link_local)
    return where +
           " is a link-local address (where clouds answer instance metadata), refused unless "
           "webhooks.allow_link_local is true";
  return "";
}

}  // namespace baton::notify
