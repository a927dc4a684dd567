#pragma once

#include <string>
#include <vector>

namespace trpc {

/// What a TLS handshake established about a connection: the peer's identity (its certificate,
/// when it presented one) and the parameters agreed. Fixed once the handshake is done; a server
/// handler or filter reads it through ServerContext::GetTlsPeer() to authorise by identity.
struct TlsPeer {
  /// The peer certificate's subject in RFC 2253 form ("CN=alice,O=Example"); "" without one.
  std::string subject;
  /// Its issuer, in the same form.
  std::string issuer;
  /// Its subject alternative names, each with its kind: "DNS:api.example.com",
  /// "IP:127.0.0.1", "URI:spiffe://example.org/alice", "email:alice@example.com".
  std::vector<std::string> sans;
  /// Whether the peer presented a certificate that verified (a server with mutual_auth refuses
  /// a client without one; a client always verifies unless `insecure`).
  bool verified = false;
  std::string version;   // "TLSv1.3"
  std::string cipher;    // "TLS_AES_128_GCM_SHA256"
  std::string alpn;      // the protocol agreed ("h2"), "" when none was
  bool resumed = false;  // an abbreviated handshake (a session ticket)

  /// True when `name` is one of the SANs, kind included ("DNS:api.example.com").
  bool HasSan(const std::string& name) const {
    for (const auto& s : sans) {
      if (s == name) return true;
    }
    return false;
  }
};

}  // namespace trpc
