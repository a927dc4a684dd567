#include "trpc/config/detail/address.h"

#include <arpa/inet.h>

#include <cstring>

namespace trpc::config_detail {

namespace {

// A parsed numeric address: `family` is AF_INET or AF_INET6, `bytes` holds 4 or 16 bytes.
struct IpBytes {
  int family = 0;
  unsigned char bytes[16] = {};
};

bool ParseIp(std::string_view ip, IpBytes* out) {
  // INET6_ADDRSTRLEN (46) covers every valid text form; longer input is invalid anyway.
  char buf[64];
  if (ip.empty() || ip.size() >= sizeof(buf)) return false;
  std::memcpy(buf, ip.data(), ip.size());
  buf[ip.size()] = '\0';
  if (inet_pton(AF_INET, buf, out->bytes) == 1) {
    out->family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, buf, out->bytes) == 1) {
    out->family = AF_INET6;
    return true;
  }
  return false;
}

bool IsUnspecified(const IpBytes& ip) {
  size_t n = ip.family == AF_INET ? 4 : 16;
  for (size_t i = 0; i < n; ++i) {
    if (ip.bytes[i] != 0) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParsePort(std::string_view s, uint16_t* out) {
  if (s.empty() || s.size() > 5) return false;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v == 0 || v > 65535) return false;
  *out = static_cast<uint16_t>(v);
  return true;
}

bool ParseHostPort(std::string_view s, TargetAddress* out) {
  std::string_view host;
  std::string_view port;
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return false;
    }
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
    IpBytes ip;
    if (!ParseIp(host, &ip) || ip.family != AF_INET6) return false;
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) return false;
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    // A bare IPv6 address ("::1:80") is ambiguous: it must be bracketed.
    IpBytes ip;
    if (!ParseIp(host, &ip) || ip.family != AF_INET) return false;
  }
  if (!ParsePort(port, &out->port)) return false;
  out->ip = std::string(host);
  return true;
}

}  // namespace

bool IsIpAddress(std::string_view ip) {
  IpBytes parsed;
  return ParseIp(ip, &parsed);
}

bool ParseTarget(std::string_view target, std::vector<TargetAddress>* out, std::string* bad) {
  std::vector<TargetAddress> result;
  while (true) {
    size_t comma = target.find(',');
    std::string_view element = Trim(target.substr(0, comma));
    TargetAddress addr;
    if (!ParseHostPort(element, &addr)) {
      *bad = std::string(element);
      return false;
    }
    result.push_back(std::move(addr));
    if (comma == std::string_view::npos) break;
    target.remove_prefix(comma + 1);
  }
  *out = std::move(result);
  return true;
}

bool ListenAddressesOverlap(std::string_view a, std::string_view b) {
  IpBytes x;
  IpBytes y;
  if (!ParseIp(a, &x) || !ParseIp(b, &y)) return false;
  bool x_any = IsUnspecified(x);
  bool y_any = IsUnspecified(y);
  if ((x_any && x.family == AF_INET6) || (y_any && y.family == AF_INET6)) return true;
  if (x.family != y.family) return false;
  if (x_any || y_any) return true;
  return std::memcmp(x.bytes, y.bytes, x.family == AF_INET ? 4 : 16) == 0;
}

}  // namespace trpc::config_detail
