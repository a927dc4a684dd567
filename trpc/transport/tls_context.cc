#include "trpc/transport/tls_context.h"

#include <arpa/inet.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <list>
#include <mutex>
#include <unordered_map>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"

namespace trpc {

namespace detail {

// A client's sessions to resume, by peer (its host name and address): one per peer, the
// least recently stored dropped past kMaxSessions. A TLS 1.3 session is taken out when used (a
// ticket is meant for one resumption; the new connection gets a fresh one); a TLS 1.2 one
// stays (its server sends no new ticket on resumption). Shared by every OpenSSL context of a
// TlsContext; a reload empties it, so that no session outlives the CA or certificate it was
// verified with.
class TlsClientSessions {
 public:
  static constexpr size_t kMaxSessions = 4096;
  ~TlsClientSessions() { Clear(); }
  // Keeps `s` (taking its reference) for `key`.
  void Put(const std::string& key, SSL_SESSION* s) {
    std::lock_guard lock(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      SSL_SESSION_free(it->second.session);
      order_.erase(it->second.age);
      by_key_.erase(it);
    }
    order_.push_back(key);
    by_key_.emplace(key, Entry{s, std::prev(order_.end())});
    while (by_key_.size() > kMaxSessions) {
      auto old = by_key_.find(order_.front());
      SSL_SESSION_free(old->second.session);
      by_key_.erase(old);
      order_.pop_front();
    }
  }
  // The session for `key` (a reference of the caller's), or null.
  SSL_SESSION* Take(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return nullptr;
    SSL_SESSION* s = it->second.session;
    if (SSL_SESSION_get_protocol_version(s) < TLS1_3_VERSION) {
      SSL_SESSION_up_ref(s);
      return s;
    }
    order_.erase(it->second.age);
    by_key_.erase(it);
    return s;
  }
  void Clear() {
    std::lock_guard lock(mu_);
    for (auto& [key, e] : by_key_) SSL_SESSION_free(e.session);
    by_key_.clear();
    order_.clear();
  }
  size_t size() {
    std::lock_guard lock(mu_);
    return by_key_.size();
  }

 private:
  struct Entry {
    SSL_SESSION* session;
    std::list<std::string>::iterator age;  // its place in order_
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> by_key_;
  std::list<std::string> order_;  // keys, least recently stored first
};

}  // namespace detail

namespace {

// "file:line: ssl.key: what (OpenSSL: ...)".
std::string KeyError(const TlsConfig& c, const std::string& key, const std::string& what) {
  std::string ossl = TakeOpenSslErrors();
  std::string where = c.OriginOf(key);
  return fmt::format("{}{}ssl.{}: {}{}", where, where.empty() ? "" : ": ", key, what,
                     ossl.empty() ? "" : " (OpenSSL: " + ossl + ")");
}

// Session tickets: AES-256-CBC + HMAC-SHA256 keys of our own, shared by every OpenSSL context
// a TlsContext makes (reloads included), so a ticket resumes on any worker and across a
// certificate rotation. The current key encrypts; it is replaced every kTicketKeyLifetime and
// the one before still decrypts (and gets the ticket renewed) for as long again.
constexpr int64_t kTicketKeyLifetimeNs = 3600LL * kNanosPerSecond;

struct TicketKey {
  unsigned char name[16];
  unsigned char aes[32];
  unsigned char hmac[32];
  int64_t born_ns;
};

struct TicketKeys {
  std::mutex mu;
  TicketKey current;
  TicketKey previous;
  bool has_previous = false;

  TicketKeys() { Fill(&current); }
  static void Fill(TicketKey* k) {
    RAND_bytes(k->name, sizeof(k->name));
    RAND_bytes(k->aes, sizeof(k->aes));
    RAND_bytes(k->hmac, sizeof(k->hmac));
    k->born_ns = MonotonicNanos();
  }
  // Under mu.
  void RotateIfDue() {
    if (MonotonicNanos() - current.born_ns < kTicketKeyLifetimeNs) return;
    previous = current;
    has_previous = true;
    Fill(&current);
  }
};

int g_ticket_index = -1;
int g_client_sessions_index = -1;  // SSL_CTX -> ClientSessions
int g_session_key_index = -1;      // SSL -> its peer's key (a std::string it owns)
std::once_flag g_index_once;

void FreeSessionKey(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::string*>(ptr);
}

void InitIndexes() {
  std::call_once(g_index_once, [] {
    g_ticket_index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    g_client_sessions_index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    g_session_key_index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, &FreeSessionKey);
  });
}

// OpenSSL's new-session callback on a client: a ticket arrived. A copy is kept: the session
// itself stays the connection's, and OpenSSL marks it not resumable if that connection ends
// without our close_notify (the server closed it first, say), which says nothing about the
// ticket. 0 = OpenSSL keeps its reference.
int OnNewClientSession(SSL* ssl, SSL_SESSION* session) {
  auto* key = static_cast<std::string*>(SSL_get_ex_data(ssl, g_session_key_index));
  auto* sessions = static_cast<detail::TlsClientSessions*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), g_client_sessions_index));
  if (key == nullptr || sessions == nullptr || !SSL_SESSION_is_resumable(session)) return 0;
  if (SSL_SESSION* copy = SSL_SESSION_dup(session)) sessions->Put(*key, copy);
  return 0;
}

bool InitTicketCrypto(const TicketKey& k, unsigned char* iv, EVP_CIPHER_CTX* cctx,
                      EVP_MAC_CTX* hctx, bool enc) {
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(k.hmac),
                                        sizeof(k.hmac)),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_end()};
  if (EVP_MAC_CTX_set_params(hctx, params) != 1) return false;
  return enc ? EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), nullptr, k.aes, iv) == 1
             : EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), nullptr, k.aes, iv) == 1;
}

// OpenSSL's ticket callback: 1 = use this key, 2 = use it and issue a fresh ticket, 0 =
// unknown key (a full handshake), -1 = error. A TLS 1.3 resumption always gets a fresh ticket
// (one ticket encryption): clients use a ticket once (RFC 8446, C.4), ours too, so without a
// new one every other reconnection would be a full handshake.
int TicketKeyCallback(SSL* ssl, unsigned char* key_name, unsigned char* iv, EVP_CIPHER_CTX* cctx,
                      EVP_MAC_CTX* hctx, int enc) {
  auto* keys = static_cast<TicketKeys*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), g_ticket_index));
  if (keys == nullptr) return -1;
  std::lock_guard lock(keys->mu);
  keys->RotateIfDue();
  if (enc) {
    if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) != 1) return -1;
    memcpy(key_name, keys->current.name, sizeof(keys->current.name));
    return InitTicketCrypto(keys->current, iv, cctx, hctx, true) ? 1 : -1;
  }
  if (memcmp(key_name, keys->current.name, sizeof(keys->current.name)) == 0) {
    const int use = SSL_version(ssl) >= TLS1_3_VERSION ? 2 : 1;
    return InitTicketCrypto(keys->current, iv, cctx, hctx, false) ? use : -1;
  }
  if (keys->has_previous &&
      memcmp(key_name, keys->previous.name, sizeof(keys->previous.name)) == 0 &&
      MonotonicNanos() - keys->previous.born_ns < 2 * kTicketKeyLifetimeNs) {
    return InitTicketCrypto(keys->previous, iv, cctx, hctx, false) ? 2 : -1;
  }
  return 0;
}

// Server ALPN: the first of our protocols the client offers.
int SelectAlpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void* arg) {
  auto* self = static_cast<const TlsContext*>(arg);
  for (const std::string& mine : self->alpn().protocols) {
    for (unsigned int i = 0; i < inlen;) {
      unsigned int len = in[i];
      if (i + 1 + len > inlen) break;
      if (len == mine.size() && memcmp(in + i + 1, mine.data(), len) == 0) {
        *out = in + i + 1;
        *outlen = static_cast<unsigned char>(len);
        return SSL_TLSEXT_ERR_OK;
      }
      i += 1 + len;
    }
  }
  // A protocol that requires its id ends the handshake with no_application_protocol; the
  // others go on without one.
  return self->alpn().required ? SSL_TLSEXT_ERR_ALERT_FATAL : SSL_TLSEXT_ERR_NOACK;
}

// The client sent no ALPN at all: the select callback is not called then, so a protocol that
// requires its id refuses here, from the ClientHello callback.
int CheckClientHello(SSL* ssl, int* alert, void* arg) {
  auto* self = static_cast<const TlsContext*>(arg);
  if (!self->alpn().required) return SSL_CLIENT_HELLO_SUCCESS;
  const unsigned char* ext = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &ext,
                                &len) == 1) {
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  *alert = SSL_AD_NO_APPLICATION_PROTOCOL;
  ERR_raise_data(ERR_LIB_SSL, SSL_R_NO_APPLICATION_PROTOCOL,
                 "the client offered no ALPN; this service requires %s",
                 self->alpn().protocols.empty() ? "one" : self->alpn().protocols[0].c_str());
  return SSL_CLIENT_HELLO_ERROR;
}

bool ParseVersion(const std::string& v, int* out) {
  if (v == "TLSv1.2") {
    *out = TLS1_2_VERSION;
  } else if (v == "TLSv1.3") {
    *out = TLS1_3_VERSION;
  } else {
    return false;
  }
  return true;
}

// Certificates in a PEM file must be valid now: an expired one stops start-up rather than
// every handshake.
bool CheckValidity(X509* cert, const TlsConfig& c, const std::string& key, std::string* err) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    char buf[128] = {0};
    BIO* b = BIO_new(BIO_s_mem());
    ASN1_TIME_print(b, X509_get0_notAfter(cert));
    int n = BIO_read(b, buf, sizeof(buf) - 1);
    BIO_free(b);
    *err = KeyError(c, key,
                    fmt::format("the certificate in '{}' expired ({})", c.cert_path,
                                std::string(buf, n > 0 ? static_cast<size_t>(n) : 0)));
    return false;
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0) {
    *err = KeyError(c, key, fmt::format("the certificate in '{}' is not valid yet", c.cert_path));
    return false;
  }
  return true;
}

std::mutex g_all_mu;
std::vector<std::weak_ptr<TlsContext>>* g_all = nullptr;  // leaked: used at exit by signals

}  // namespace

std::string TakeOpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

const char* TlsFailureName(TlsFailure f) {
  switch (f) {
    case TlsFailure::kTimeout:
      return "timeout";
    case TlsFailure::kPlaintext:
      return "plaintext";
    case TlsFailure::kTlsOnPlaintext:
      return "tls_on_plaintext_port";
    case TlsFailure::kProtocolVersion:
      return "protocol_version";
    case TlsFailure::kNoSharedCipher:
      return "no_shared_cipher";
    case TlsFailure::kNoCertificate:
      return "no_certificate";
    case TlsFailure::kBadCertificate:
      return "bad_certificate";
    case TlsFailure::kAlpn:
      return "alpn";
    case TlsFailure::kPeerClosed:
      return "peer_closed";
    case TlsFailure::kLimit:
      return "limit";
    case TlsFailure::kOther:
    case TlsFailure::kCount:
      break;
  }
  return "other";
}

TlsCounters& TlsCounters::Get() {
  static TlsCounters* counters = new TlsCounters;  // never destroyed: read at any time
  return *counters;
}

TlsContext::TlsContext(const TlsConfig& config, TlsRole role, const TlsAlpn& alpn)
    : config_(config), role_(role), alpn_(alpn) {
  for (const std::string& p : alpn_.protocols) {
    alpn_wire_.push_back(static_cast<char>(p.size()));
    alpn_wire_ += p;
  }
}

TlsContext::~TlsContext() {
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

std::shared_ptr<TlsContext> TlsContext::Create(const TlsConfig& config, TlsRole role,
                                               const TlsAlpn& alpn, std::string* err) {
  InitIndexes();
  std::shared_ptr<TlsContext> self(new TlsContext(config, role, alpn));
  if (role == TlsRole::kServer) self->ticket_keys_ = std::make_shared<TicketKeys>();
  if (role == TlsRole::kClient)
    self->client_sessions_ = std::make_shared<detail::TlsClientSessions>();
  ERR_clear_error();
  self->ctx_ = self->Build(err);
  if (self->ctx_ == nullptr) return nullptr;
  std::lock_guard lock(g_all_mu);
  if (g_all == nullptr) g_all = new std::vector<std::weak_ptr<TlsContext>>;
  g_all->erase(std::remove_if(g_all->begin(), g_all->end(),
                              [](const std::weak_ptr<TlsContext>& w) { return w.expired(); }),
               g_all->end());
  g_all->push_back(self);
  return self;
}

SSL_CTX* TlsContext::Build(std::string* err) const {
  const TlsConfig& c = config_;
  const bool server = role_ == TlsRole::kServer;
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) {
    *err = KeyError(c, "enable", "OpenSSL could not make a context");
    return nullptr;
  }
  auto fail = [&](std::string why) {
    *err = std::move(why);
    SSL_CTX_free(ctx);
    return nullptr;
  };

  // Versions: TLS 1.2 and 1.3 unless `protocols` narrows them; never anything older.
  int lo = TLS1_2_VERSION;
  int hi = TLS1_3_VERSION;
  if (!c.protocols.empty()) {
    lo = INT32_MAX;
    hi = 0;
    for (const std::string& p : c.protocols) {
      int v = 0;
      if (!ParseVersion(p, &v)) {
        bool old = p == "SSLv2" || p == "SSLv3" || p == "TLSv1" || p == "TLSv1.0" || p == "TLSv1.1";
        return fail(KeyError(
            c, "protocols",
            old ? fmt::format("'{}' is below TLS 1.2 and is refused; allowed: TLSv1.2, TLSv1.3", p)
                : fmt::format("unknown version '{}'; allowed: TLSv1.2, TLSv1.3", p)));
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  SSL_CTX_set_min_proto_version(ctx, lo);
  SSL_CTX_set_max_proto_version(ctx, hi);
  // No renegotiation (a CPU sink for a peer, and a source of confusion about identity), no
  // compression (CRIME).
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // (Not SSL_MODE_RELEASE_BUFFERS: it frees and reallocates the 16 KiB record buffers around
  // every record, which doubled the CPU of a TLS request. A connection releases them once it
  // has been idle a while instead: Connection::OnTlsIdleTimer.)
  // Read whole records (and what follows them) with one read(2), not a header then a body.
  SSL_CTX_set_read_ahead(ctx, 1);

  if (!c.ciphers.empty() && SSL_CTX_set_cipher_list(ctx, c.ciphers.c_str()) != 1) {
    return fail(KeyError(c, "ciphers", fmt::format("no usable cipher in '{}'", c.ciphers)));
  }

  // Our certificate: required on a server, optional on a client (mutual TLS).
  if (server && (c.cert_path.empty() || c.private_key_path.empty())) {
    return fail(KeyError(c, c.cert_path.empty() ? "cert_path" : "private_key_path",
                         "required on a service with ssl.enable"));
  }
  if (!c.cert_path.empty() || !c.private_key_path.empty()) {
    if (c.cert_path.empty() || c.private_key_path.empty()) {
      return fail(KeyError(c, c.cert_path.empty() ? "cert_path" : "private_key_path",
                           "cert_path and private_key_path go together"));
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, c.cert_path.c_str()) != 1) {
      return fail(KeyError(c, "cert_path",
                           fmt::format("cannot load a PEM certificate from '{}'", c.cert_path)));
    }
    if (!CheckValidity(SSL_CTX_get0_certificate(ctx), c, "cert_path", err)) {
      SSL_CTX_free(ctx);
      return nullptr;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, c.private_key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
      // (OpenSSL checks the pair as it loads the key.)
      const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
      return fail(KeyError(
          c, "private_key_path",
          mismatch ? fmt::format("the key in '{}' does not match the certificate in '{}'",
                                 c.private_key_path, c.cert_path)
                   : fmt::format("cannot load a PEM private key from '{}'", c.private_key_path)));
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return fail(KeyError(c, "private_key_path",
                           fmt::format("the key in '{}' does not match the certificate in '{}'",
                                       c.private_key_path, c.cert_path)));
    }
  }

  // Whom we trust.
  if (!c.ca_cert_path.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, c.ca_cert_path.c_str(), nullptr) != 1) {
      return fail(
          KeyError(c, "ca_cert_path",
                   fmt::format("cannot load PEM CA certificates from '{}'", c.ca_cert_path)));
    }
  } else if (!server && !c.insecure) {
    SSL_CTX_set_default_verify_paths(ctx);
  }
  if (!c.crl_path.empty()) {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    BIO* b = BIO_new_file(c.crl_path.c_str(), "r");
    X509_CRL* crl = b != nullptr ? PEM_read_bio_X509_CRL(b, nullptr, nullptr, nullptr) : nullptr;
    if (b != nullptr) BIO_free(b);
    if (crl == nullptr) {
      return fail(
          KeyError(c, "crl_path", fmt::format("cannot load a PEM CRL from '{}'", c.crl_path)));
    }
    X509_STORE_add_crl(store, crl);
    X509_CRL_free(crl);
    X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
  }

  if (server) {
    if (c.mutual_auth) {
      if (c.ca_cert_path.empty()) {
        return fail(KeyError(c, "mutual_auth",
                             "needs ca_cert_path: the CAs client certificates must chain to"));
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.ca_cert_path.c_str())) {
        SSL_CTX_set_client_CA_list(ctx, names);
      }
    }
    if (!c.dh_param_path.empty()) {
      BIO* b = BIO_new_file(c.dh_param_path.c_str(), "r");
      EVP_PKEY* dh = b != nullptr ? PEM_read_bio_Parameters(b, nullptr) : nullptr;
      if (b != nullptr) BIO_free(b);
      if (dh == nullptr || SSL_CTX_set0_tmp_dh_pkey(ctx, dh) != 1) {
        if (dh != nullptr) EVP_PKEY_free(dh);
        return fail(
            KeyError(c, "dh_param_path",
                     fmt::format("cannot load PEM DH parameters from '{}'", c.dh_param_path)));
      }
    } else {
      SSL_CTX_set_dh_auto(ctx, 1);
    }
    SSL_CTX_set_alpn_select_cb(ctx, &SelectAlpn, const_cast<TlsContext*>(this));
    SSL_CTX_set_client_hello_cb(ctx, &CheckClientHello, const_cast<TlsContext*>(this));
    // Resumption by tickets only (no server-side cache to share between workers), with our
    // keys; TLS 1.3 sends one ticket per full handshake.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_ex_data(ctx, g_ticket_index, ticket_keys_.get());
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, &TicketKeyCallback);
  } else {
    SSL_CTX_set_verify(ctx, c.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
    // Resumption: the sessions (tickets) the servers send are kept per peer, in our cache, not
    // OpenSSL's (which a client's context does not look up by itself).
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_set_ex_data(ctx, g_client_sessions_index, client_sessions_.get());
    SSL_CTX_sess_set_new_cb(ctx, &OnNewClientSession);
    if (!alpn_wire_.empty()) {
      SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(alpn_wire_.data()),
                              static_cast<unsigned int>(alpn_wire_.size()));
    }
  }
  return ctx;
}

SSL* TlsContext::NewSsl(const std::string& host, const std::string& session_key) const {
  SSL_CTX* ctx;
  {
    std::lock_guard lock(mu_);
    ctx = ctx_;
    SSL_CTX_up_ref(ctx);  // a reload may free it meanwhile
  }
  SSL* ssl = SSL_new(ctx);
  SSL_CTX_free(ctx);  // (the SSL holds its own reference)
  if (ssl == nullptr) return nullptr;
  if (role_ == TlsRole::kServer) {
    SSL_set_accept_state(ssl);
    return ssl;
  }
  SSL_set_connect_state(ssl);
  const std::string& name = config_.sni_name.empty() ? host : config_.sni_name;
  in6_addr scratch;
  const bool is_ip = inet_pton(AF_INET, name.c_str(), &scratch) == 1 ||
                     inet_pton(AF_INET6, name.c_str(), &scratch) == 1;
  // SNI carries host names only, never addresses (RFC 6066).
  if (!name.empty() && !is_ip) SSL_set_tlsext_host_name(ssl, name.c_str());
  if (!config_.insecure && config_.verify_peer_name && !name.empty()) {
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
    } else {
      SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      SSL_set1_host(ssl, name.c_str());
    }
  }
  if (!session_key.empty() && client_sessions_ != nullptr) {
    // (The name is part of the key: a session is offered only to the server it was made with,
    // under the name it was verified for.)
    std::string key = name + "|" + session_key;
    if (SSL_SESSION* s = client_sessions_->Take(key)) {
      SSL_set_session(ssl, s);  // (takes a reference of its own)
      SSL_SESSION_free(s);
    }
    SSL_set_ex_data(ssl, g_session_key_index, new std::string(std::move(key)));
  }
  return ssl;
}

bool TlsContext::Reload(std::string* err) {
  ERR_clear_error();
  SSL_CTX* fresh = Build(err);
  if (fresh == nullptr) {
    TlsCounters::Get().reload_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  SSL_CTX* old;
  {
    std::lock_guard lock(mu_);
    old = ctx_;
    ctx_ = fresh;
  }
  SSL_CTX_free(old);  // connections made from it keep their own references
  // A resumed session is not verified again: none may outlive the CA, CRL or certificate it
  // was made with.
  if (client_sessions_ != nullptr) client_sessions_->Clear();
  TlsCounters::Get().reloads.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::vector<std::shared_ptr<TlsContext>> TlsContext::All() {
  std::vector<std::shared_ptr<TlsContext>> out;
  std::lock_guard lock(g_all_mu);
  if (g_all == nullptr) return out;
  for (const auto& w : *g_all) {
    if (auto s = w.lock()) out.push_back(std::move(s));
  }
  return out;
}

size_t TlsContext::ReloadAll() {
  size_t failed = 0;
  for (const auto& c : All()) {
    std::string err;
    if (c->Reload(&err)) {
      TRPC_LOG_INFO("TLS: reloaded {} (certificate '{}')", c->config().origin,
                    c->config().cert_path);
    } else {
      ++failed;
      TRPC_LOG_ERROR("TLS: reload refused, the previous certificate stays in use: {}", err);
    }
  }
  return failed;
}

}  // namespace trpc
