#include "baton/notify/destination_policy.h"

#include <arpa/inet.h>

#include <array>
#include <cstring>
#include <optional>

namespace baton::notify {

namespace {

/// An address as parsed by inet_pton: IPv4 (4 bytes used) or IPv6 (16).
/// An IPv4 address written as IPv6 (::ffff:a.b.c.d) is taken as IPv4.
struct Address {
  bool v4 = false;
  std::array<unsigned char, 16> b{};
  bool operator==(const Address& o) const { return v4 == o.v4 && b == o.b; }
};

std::optional<Address> parse(const std::string& text) {
  Address a;
  if (::inet_pton(AF_INET, text.c_str(), a.b.data()) == 1) {
    a.v4 = true;
    return a;
  }
  if (::inet_pton(AF_INET6, text.c_str(), a.b.data()) != 1) return std::nullopt;
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(a.b.data(), mapped, 12) == 0) {
    Address v4;
    v4.v4 = true;
    std::memcpy(v4.b.data(), a.b.data() + 12, 4);
    return v4;
  }
  return a;
}

bool all_zero(const Address& a, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i)
    if (a.b[i] != 0) return false;
  return true;
}

bool is_loopback(const Address& a) {
  // 0.0.0.0/8 and :: reach this host too when connected to.
  if (a.v4) return a.b[0] == 127 || a.b[0] == 0;
  return all_zero(a, 0, 15) && (a.b[15] == 1 || a.b[15] == 0);
}

bool is_unspecified(const Address& a) { return a.v4 ? all_zero(a, 0, 4) : all_zero(a, 0, 16); }

bool is_link_local(const Address& a) {
  if (a.v4) return a.b[0] == 169 && a.b[1] == 254;   // 169.254.0.0/16
  return a.b[0] == 0xfe && (a.b[1] & 0xc0) == 0x80;  // fe80::/10
}

bool is_multicast_or_broadcast(const Address& a) {
  if (a.v4) return (a.b[0] & 0xf0) == 0xe0 || (a.b[0] == 255 && a.b[1] == 255 && a.b[2] == 255 && a.b[3] == 255);
  return a.b[0] == 0xff;
}

std::string text_of(const Address& a) {
  char out[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(a.v4 ? AF_INET : AF_INET6, a.b.data(), out, sizeof out);
  return out;
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
bool is_own(const Address& a, std::uint16_t port, const std::vector<std::string>& own) {
  for (const auto& ep : own) {
    const auto [host, port_text] = split_endpoint(ep);
    if (port_text != std::to_string(port)) continue;
    const auto mine = parse(host);
    if (!mine) continue;  // a host name: its addresses are not known here
    if (*mine == a) return true;
    if ((is_unspecified(*mine) || is_loopback(*mine)) && is_loopback(a)) return true;
  }
  return false;
}

}  // namespace

std::string destination_refusal(const std::string& address, std::uint16_t port, const DestinationPolicy& policy) {
  const auto a = parse(address);
  if (!a) return "'" + address + "' is not an IP address";
  const std::string where = text_of(*a) + ":" + std::to_string(port);
  if (is_own(*a, port, policy.own_endpoints)) return where + " is this node's own port";
  if (is_multicast_or_broadcast(*a)) return where + " is a multicast or broadcast address";
  if (is_loopback(*a) && !policy.allow_loopback)
    return where + " is a loopback address (this host), refused unless webhooks.allow_loopback is true";
  if (is_link_local(*a) && !policy.allow_link_local)
    return where +
           " is a link-local address (where clouds answer instance metadata), refused unless "
           "webhooks.allow_link_local is true";
  return "";
}

}  // namespace baton::notify
