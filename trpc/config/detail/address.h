#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trpc::config_detail {

/// True for a numeric IPv4 ("127.0.0.1") or IPv6 ("::1", no brackets) address. Host names are
/// not accepted: the config never resolves names.
bool IsIpAddress(std::string_view ip);

/// One backend of a client target.
struct TargetAddress {
  std::string ip;  // Without brackets, also for IPv6.
  uint16_t port = 0;

  bool operator==(const TargetAddress&) const = default;
};

/// Parses "ip:port[,ip:port...]" (IPv6 as "[::1]:port"; spaces around commas allowed; port
/// 1..65535). On failure returns false and sets `*bad` to the offending element.
bool ParseTarget(std::string_view target, std::vector<TargetAddress>* out, std::string* bad);

/// True if listening on `a` and `b` with the same port would collide: the same address, or
/// either is a wildcard that covers the other ("0.0.0.0" covers IPv4, "::" covers both, as on
/// Linux with the default bindv6only=0). Both must pass IsIpAddress.
bool ListenAddressesOverlap(std::string_view a, std::string_view b);

}  // namespace trpc::config_detail
