#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

/// TLS settings of one service or one callee (`ssl:` under `server.service[]` and
/// `client.service[]`). tRPC-Cpp's keys, so its YAML moves over as it is, and ours beside them.
/// docs/tls.md explains each; docs/config.md lists them with their defaults and units.

namespace trpc {

struct TlsConfig {
  bool enable = false;
  /// PEM files. A server needs its certificate (chain) and key; a client needs them only to
  /// present a certificate (mutual TLS).
  std::string cert_path;
  std::string private_key_path;
  /// PEM file of the CAs that peers' certificates must chain to. Server: used with
  /// mutual_auth. Client: "" = the system's CAs.
  std::string ca_cert_path;
  /// Server: require a client certificate that chains to ca_cert_path (refused at the
  /// handshake otherwise).
  bool mutual_auth = false;
  /// OpenSSL cipher list for TLS 1.2 ("" = OpenSSL's defaults). TLS 1.3's suites are fixed.
  std::string ciphers;
  /// Versions allowed: any of "TLSv1.2", "TLSv1.3" (empty = both). Older ones are refused.
  std::vector<std::string> protocols;
  /// Server: PEM DH parameters for TLS 1.2's DHE suites ("" = OpenSSL's built-in groups).
  std::string dh_param_path;
  /// Client: the name sent as SNI and, with verify_peer_name, checked against the server's
  /// certificate ("" = the target's host name when it has one).
  std::string sni_name;
  /// Client: skip verifying the server's certificate altogether (tests only).
  bool insecure = false;
  /// ms from the connection's start to the end of its handshake; 1..600000.
  uint32_t handshake_timeout = 5000;
  /// Server: handshakes in progress at once on one worker (across its TLS services); a
  /// connection past it is closed at once (counted as "limit"), so a flood of handshakes holds
  /// a bounded share of a worker. 1..1000000.
  uint32_t max_handshakes = 1024;
  /// PEM certificate revocation list checked with the peer's chain ("" = none).
  std::string crl_path;
  /// Client: check the server certificate's name: sni_name if set, else the target's host
  /// name, else its IP address (an IP SAN).
  bool verify_peer_name = true;

  /// "file:line" of the `ssl:` map and of each key given, for errors found when the files are
  /// loaded (at start-up, not at config load).
  std::string origin;
  std::map<std::string, std::string> key_origin;

  /// Where `key` was set ("file:line"), else the map's origin.
  const std::string& OriginOf(const std::string& key) const {
    auto it = key_origin.find(key);
    return it != key_origin.end() ? it->second : origin;
  }
  bool operator==(const TlsConfig&) const = default;
};

}  // namespace trpc
