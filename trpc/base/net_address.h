#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trpc {

/// An IPv4 or IPv6 socket address. Value type.
class NetAddress {
 public:
  NetAddress() = default;
  /// Parses "1.2.3.4:80", "[::1]:80". Returns false on anything else.
  static bool Parse(std::string_view host_port, NetAddress* out);
  /// From a numeric IP (v4 or v6, no brackets) and a port.
  static bool FromIpPort(std::string_view ip, uint16_t port, NetAddress* out);
  static NetAddress FromSockaddr(const sockaddr* sa, socklen_t len);
  /// Parses a backend list "ip:port[,ip:port...]" (spaces around commas allowed, ports 1..65535,
  /// IPv6 bracketed). On failure returns false and sets `*bad` to the offending element.
  static bool ParseList(std::string_view list, std::vector<NetAddress>* out, std::string* bad);

  /// True for the wildcard address (0.0.0.0 or ::).
  bool IsUnspecified() const;
  /// True for a loopback address: 127.0.0.0/8, ::1, or ::ffff:127.x.y.z.
  bool IsLoopback() const;
  /// Same family and address bytes (ports ignored).
  bool SameIp(const NetAddress& other) const;

  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&addr_); }
  socklen_t length() const { return len_; }
  int family() const { return addr_.ss_family; }
  uint16_t port() const;
  std::string ip() const;
  std::string ToString() const;  // "1.2.3.4:80" or "[::1]:80"

 private:
  sockaddr_storage addr_{};
  socklen_t len_ = 0;
};

}  // namespace trpc
