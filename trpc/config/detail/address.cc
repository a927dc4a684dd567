#include "trpc/config/detail/address.h"

#include "trpc/base/net_address.h"

namespace trpc::config_detail {

bool IsIpAddress(std::string_view ip) {
  NetAddress a;
  return NetAddress::FromIpPort(ip, 0, &a);
}

bool ParseTarget(std::string_view target, std::vector<TargetAddress>* out, std::string* bad) {
  std::vector<NetAddress> addresses;
  if (!NetAddress::ParseList(target, &addresses, bad)) return false;
  out->clear();
  for (const NetAddress& a : addresses) out->push_back(TargetAddress{a.ip(), a.port()});
  return true;
}

bool ListenAddressesOverlap(std::string_view a, std::string_view b) {
  NetAddress x;
  NetAddress y;
  if (!NetAddress::FromIpPort(a, 0, &x) || !NetAddress::FromIpPort(b, 0, &y)) return false;
  // "::" also takes IPv4 (Linux's default bindv6only=0); "0.0.0.0" covers every IPv4 address.
  if ((x.IsUnspecified() && x.family() == AF_INET6) ||
      (y.IsUnspecified() && y.family() == AF_INET6)) {
    return true;
  }
  if (x.family() != y.family()) return false;
  return x.IsUnspecified() || y.IsUnspecified() || x.SameIp(y);
}

}  // namespace trpc::config_detail
