#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/tls_config.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace trpc {

enum class TlsRole : uint8_t { kServer, kClient };

namespace detail {
class TlsClientSessions;
}

/// The application protocols (ALPN) a protocol's connections offer or accept.
struct TlsAlpn {
  /// In preference order, e.g. {"h2"}; empty = the protocol has no ALPN id (trpc).
  std::vector<std::string> protocols;
  /// Server: refuse a client whose offer holds none of `protocols` (or that offers nothing);
  /// client: refuse a server that selects none. Otherwise a missing match proceeds without.
  bool required = false;
};

/// Why handshakes failed, counted process-wide for /metrics
/// (trpc_tls_handshake_failures_total{reason}).
enum class TlsFailure : uint8_t {
  kTimeout,          // handshake_timeout passed
  kPlaintext,        // the peer spoke plaintext to a TLS port
  kTlsOnPlaintext,   // the peer started a TLS handshake on a port without TLS
  kProtocolVersion,  // no version in common (a TLS 1.1 client, say)
  kNoSharedCipher,   // no cipher suite in common
  kNoCertificate,    // mutual_auth: the client presented none
  kBadCertificate,   // a certificate that did not verify (expired, wrong CA, name, revoked)
  kAlpn,             // no application protocol in common (gRPC without h2)
  kPeerClosed,       // the peer closed (or reset) the connection mid-handshake
  kLimit,            // too many handshakes in progress on the worker (max_handshakes)
  kOther,            // anything else OpenSSL refused (garbage bytes, a bad record)
  kCount,
};
const char* TlsFailureName(TlsFailure f);

/// OpenSSL's error queue of this thread as text, oldest first ("error:0A000086:SSL
/// routines::certificate verify failed; ..."), emptied; "" when it holds nothing.
std::string TakeOpenSslErrors();

/// Process-wide TLS counters (relaxed atomics: statistics).
struct TlsCounters {
  std::atomic<uint64_t> handshakes{0};  // completed
  std::atomic<uint64_t> resumed{0};     // of them, resumed from a session ticket
  std::atomic<uint64_t> failures[static_cast<int>(TlsFailure::kCount)] = {};
  std::atomic<uint64_t> idle_releases{0};    // idle connections that gave OpenSSL's buffers back
  std::atomic<uint64_t> reloads{0};          // certificate reloads that took
  std::atomic<uint64_t> reload_failures{0};  // ... and that were refused (the old one stays)

  void Fail(TlsFailure f) { failures[static_cast<int>(f)].fetch_add(1, std::memory_order_relaxed); }
  static TlsCounters& Get();
};

/// One service's (or callee's) TLS settings made ready: OpenSSL's context, built from the
/// files named by its TlsConfig, checked at start-up (Create) and again at every Reload.
///
/// Thread contract: Create on the control thread; NewSsl from any thread (a connection's);
/// Reload from any thread (SIGHUP, the admin command), swapping in a new OpenSSL context that
/// later connections take while established ones keep theirs.
class TlsContext {
 public:
  /// Loads and checks everything; null with *err ("file:line: ssl.key: what is wrong
  /// (OpenSSL's reason)") when a file cannot be used: a bad path, an unreadable or mismatched
  /// key, an expired certificate, a version below TLS 1.2.
  static std::shared_ptr<TlsContext> Create(const TlsConfig& config, TlsRole role,
                                            const TlsAlpn& alpn, std::string* err);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// A new connection's OpenSSL object, in the role's state (accept or connect), or null when
  /// OpenSSL cannot make one. Client side: `host` is the target's host name or IP ("" =
  /// unknown), used for SNI and name verification unless the config names sni_name; with a
  /// `session_key` (the peer's address), the connection offers the session (ticket) the last
  /// connection to that peer under that name received, if any, and keeps the one it receives
  /// for the next ("" = no resumption).
  SSL* NewSsl(const std::string& host, const std::string& session_key = {}) const;

  /// Loads the certificate, key and CA files again. On success new connections use them; on
  /// failure (*err says why) the current ones stay. Counted in TlsCounters either way.
  bool Reload(std::string* err);

  const TlsConfig& config() const { return config_; }
  TlsRole role() const { return role_; }
  const TlsAlpn& alpn() const { return alpn_; }
  int64_t handshake_timeout_ms() const { return config_.handshake_timeout; }

  /// Every context made by Create and still alive (for SIGHUP and the admin command).
  static std::vector<std::shared_ptr<TlsContext>> All();
  /// Reload() on each of All(); the number that failed, each logged.
  static size_t ReloadAll();

 private:
  TlsContext(const TlsConfig& config, TlsRole role, const TlsAlpn& alpn);
  // Builds an OpenSSL context from the files; null with *err.
  SSL_CTX* Build(std::string* err) const;

  TlsConfig config_;
  TlsRole role_;
  TlsAlpn alpn_;
  std::string alpn_wire_;  // the ALPN list in its wire form (length-prefixed names)
  mutable std::mutex mu_;
  SSL_CTX* ctx_ = nullptr;  // guarded by mu_ (the pointer; OpenSSL refcounts the context)
  // The session-ticket keys every OpenSSL context of this TlsContext shares, so a ticket
  // issued before a reload still resumes after it, on whichever worker.
  std::shared_ptr<void> ticket_keys_;
  // Client: the sessions to resume, by peer (shared by the reloads' contexts as well).
  std::shared_ptr<detail::TlsClientSessions> client_sessions_;
};

}  // namespace trpc
