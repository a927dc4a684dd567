#include "trpc/transport/detail/tls_channel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "trpc/base/logging.h"

namespace trpc::detail {

namespace {

// Plaintext bytes one SSL_write takes: a full TLS record.
constexpr size_t kRecordBytes = 16384;

// The BIO OpenSSL does its IO through: reads come from the socket, writes go to the channel's
// wire buffer (never blocking, so OpenSSL never wants to write).
int BioRead(BIO* b, char* buf, int len) {
  BIO_clear_retry_flags(b);
  auto* ch = static_cast<TlsChannel*>(BIO_get_data(b));
  ssize_t n = ch->SocketRead(buf, static_cast<size_t>(len));
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(b);
  return static_cast<int>(n);
}

int BioWrite(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  static_cast<TlsChannel*>(BIO_get_data(b))->WireWrite(data, static_cast<size_t>(len));
  return len;
}

long BioCtrl(BIO* b, int cmd, long num, void* ptr) {
  (void)b;
  (void)num;
  (void)ptr;
  switch (cmd) {
    case BIO_CTRL_FLUSH:  // the records are in the wire buffer: the connection sends them
      return 1;
    default:
      return 0;
  }
}

int BioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* Method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "trpc_socket");
    BIO_meth_set_read(m, &BioRead);
    BIO_meth_set_write(m, &BioWrite);
    BIO_meth_set_ctrl(m, &BioCtrl);
    BIO_meth_set_create(m, &BioCreate);
    return m;
  }();
  return method;
}

// "CN=alice,O=Example".
std::string NameText(const X509_NAME* name) {
  if (name == nullptr) return "";
  BIO* b = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(b);
  return out;
}

void AddSans(X509* cert, std::vector<std::string>* out) {
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    auto text = [](const ASN1_STRING* s) {
      return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                         static_cast<size_t>(ASN1_STRING_length(s)));
    };
    switch (g->type) {
      case GEN_DNS:
        out->push_back("DNS:" + text(g->d.dNSName));
        break;
      case GEN_URI:
        out->push_back("URI:" + text(g->d.uniformResourceIdentifier));
        break;
      case GEN_EMAIL:
        out->push_back("email:" + text(g->d.rfc822Name));
        break;
      case GEN_IPADD: {
        const ASN1_OCTET_STRING* ip = g->d.iPAddress;
        char buf[64] = {0};
        int family = ASN1_STRING_length(ip) == 4 ? AF_INET : AF_INET6;
        if (ASN1_STRING_length(ip) == 4 || ASN1_STRING_length(ip) == 16) {
          inet_ntop(family, ASN1_STRING_get0_data(ip), buf, sizeof(buf));
          out->push_back(std::string("IP:") + buf);
        }
        break;
      }
      default:
        break;
    }
  }
  GENERAL_NAMES_free(names);
}

}  // namespace

bool LooksLikeTlsHandshake(const char* data, size_t n) {
  // A record: type 0x16 (handshake) or 0x15 (an alert, a server's refusal), version 0x03 0x0?.
  if (n >= 1 && data[0] != 0x16 && data[0] != 0x15) return false;
  if (n >= 2 && data[1] != 0x03) return false;
  if (n >= 3 && static_cast<uint8_t>(data[2]) > 0x04) return false;
  return true;
}

std::string DescribePlaintext(const char* data, size_t n) {
  if (LooksLikeTlsHandshake(data, n)) return "";
  std::string_view s(data, n);
  if (s.substr(0, 4) == "PRI ") return "an HTTP/2 client without TLS (h2c)";
  if (n >= 2 && static_cast<uint8_t>(data[0]) == 0x09 && static_cast<uint8_t>(data[1]) == 0x30) {
    return "a trpc client without TLS";
  }
  for (std::string_view m :
       {"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH ", "CONNECT ", "HTTP/"}) {
    if (s.substr(0, m.size()) == m.substr(0, std::min(m.size(), n))) {
      return "an HTTP/1.x peer without TLS";
    }
  }
  return fmt::format("a peer without TLS (first byte 0x{:02x})", static_cast<uint8_t>(data[0]));
}

std::unique_ptr<TlsChannel> TlsChannel::Create(SSL* ssl, int fd, const TlsContext* context) {
  BIO* bio = BIO_new(Method());
  if (bio == nullptr) {
    SSL_free(ssl);
    return nullptr;
  }
  return std::unique_ptr<TlsChannel>(new TlsChannel(ssl, bio, fd, context));
}

TlsChannel::TlsChannel(SSL* ssl, BIO* bio, int fd, const TlsContext* context)
    : ssl_(ssl), fd_(fd), context_(context) {
  BIO_set_data(bio, this);
  SSL_set_bio(ssl_, bio, bio);  // one BIO both ways: the SSL takes over its one reference
  // A peer that closes without close_notify ends the stream like an EOF (curl and h2load do):
  // the protocols on top frame their messages and see a cut-off one for themselves.
  SSL_set_options(ssl_, SSL_OP_IGNORE_UNEXPECTED_EOF);
}

TlsChannel::~TlsChannel() { SSL_free(ssl_); }

ssize_t TlsChannel::SocketRead(char* buf, size_t len) {
  ssize_t n;
  do {
    n = ::read(fd_, buf, len);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) socket_dry_ = true;
    return -1;
  }
  if (n == 0) {
    eof_ = true;
    return 0;
  }
  bytes_read_ += static_cast<uint64_t>(n);
  socket_dry_ = static_cast<size_t>(n) < len;
  if (first_read_) {
    first_read_ = false;
    if (!LooksLikeTlsHandshake(buf, static_cast<size_t>(n))) {
      plaintext_ = true;
      plaintext_kind_ = DescribePlaintext(buf, static_cast<size_t>(n));
      errno = EPROTO;
      return -1;
    }
  }
  return n;
}

TlsFailure TlsChannel::Classify(int ssl_error, std::string* err) {
  const bool server = context_->role() == TlsRole::kServer;
  if (plaintext_) {
    TakeOpenSslErrors();
    *err = server ? fmt::format("plaintext on a TLS port: the peer looks like {}", plaintext_kind_)
                  : fmt::format("the server answered without TLS ({}): is TLS on at its port?",
                                plaintext_kind_);
    return TlsFailure::kPlaintext;
  }
  if (ssl_error == SSL_ERROR_ZERO_RETURN || (ssl_error == SSL_ERROR_SYSCALL && eof_)) {
    TakeOpenSslErrors();
    *err = "the peer closed the connection during the TLS handshake";
    return TlsFailure::kPeerClosed;
  }
  if (ssl_error == SSL_ERROR_SYSCALL) {
    int e = errno;
    std::string text = TakeOpenSslErrors();
    *err = fmt::format("TLS handshake: {}", text.empty() ? strerror(e) : text);
    return TlsFailure::kPeerClosed;
  }
  const int reason = ERR_GET_REASON(ERR_peek_error());
  TlsFailure f = TlsFailure::kOther;
  switch (reason) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
    case SSL_R_NO_PROTOCOLS_AVAILABLE:
    case SSL_R_UNSUPPORTED_SSL_VERSION:
      f = TlsFailure::kProtocolVersion;
      break;
    case SSL_R_NO_SHARED_CIPHER:
      f = TlsFailure::kNoSharedCipher;
      break;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      f = TlsFailure::kNoCertificate;
      break;
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
      f = TlsFailure::kBadCertificate;
      break;
    case SSL_R_NO_APPLICATION_PROTOCOL:
    case SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL:
      f = TlsFailure::kAlpn;
      break;
    default:
      break;
  }
  std::string text = TakeOpenSslErrors();
  long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK && f == TlsFailure::kBadCertificate) {
    text += fmt::format(" (certificate: {})", X509_verify_cert_error_string(verify));
  }
  *err = "TLS handshake failed: " + (text.empty() ? std::string("refused by OpenSSL") : text);
  return f;
}

TlsChannel::Step TlsChannel::Handshake(std::string* err, TlsFailure* failure) {
  if (done_) return Step::kDone;
  ERR_clear_error();
  int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    done_ = true;
    FillPeer();
    const TlsAlpn& alpn = context_->alpn();
    if (context_->role() == TlsRole::kClient && alpn.required &&
        std::find(alpn.protocols.begin(), alpn.protocols.end(), peer_->alpn) ==
            alpn.protocols.end()) {
      *err = fmt::format(
          "the server did not agree on ALPN '{}' (agreed: '{}'): it does not serve "
          "this protocol over TLS",
          alpn.protocols.empty() ? "" : alpn.protocols[0], peer_->alpn);
      *failure = TlsFailure::kAlpn;
      return Step::kFailed;
    }
    return Step::kDone;
  }
  int e = SSL_get_error(ssl_, rc);
  if (e == SSL_ERROR_WANT_READ) return Step::kWantRead;
  *failure = Classify(e, err);
  return Step::kFailed;
}

void TlsChannel::FillPeer() {
  auto p = std::make_shared<TlsPeer>();
  if (X509* cert = SSL_get0_peer_certificate(ssl_)) {
    p->subject = NameText(X509_get_subject_name(cert));
    p->issuer = NameText(X509_get_issuer_name(cert));
    AddSans(cert, &p->sans);
    p->verified =
        SSL_get_verify_result(ssl_) == X509_V_OK && SSL_get_verify_mode(ssl_) != SSL_VERIFY_NONE;
  }
  p->version = SSL_get_version(ssl_);
  if (const char* c = SSL_get_cipher_name(ssl_)) p->cipher = c;
  const unsigned char* alpn = nullptr;
  unsigned int alpn_len = 0;
  SSL_get0_alpn_selected(ssl_, &alpn, &alpn_len);
  if (alpn != nullptr) p->alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
  p->resumed = SSL_session_reused(ssl_) == 1;
  peer_ = std::move(p);
}

ssize_t TlsChannel::Read(void* buf, size_t len, std::string* err) {
  ERR_clear_error();
  int n = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(len, INT32_MAX)));
  if (n > 0) return n;
  int e = SSL_get_error(ssl_, n);
  if (e == SSL_ERROR_WANT_READ) {
    errno = EAGAIN;
    return -1;
  }
  if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && eof_)) return 0;
  std::string text = TakeOpenSslErrors();
  *err = fmt::format("TLS: {}", text.empty() ? strerror(errno) : text);
  errno = EPROTO;
  return -1;
}

bool TlsChannel::MayHaveMore() const { return SSL_has_pending(ssl_) == 1 || !socket_dry_; }

bool TlsChannel::Encrypt(ChainBuffer* plain, size_t max, std::string* err) {
  size_t done = 0;
  while (!plain->empty() && done < max) {
    const size_t want = std::min(plain->size(), kRecordBytes);
    iovec iov;
    int rc;
    ERR_clear_error();
    if (plain->ExportIovecs(&iov, 1) == 1 && iov.iov_len >= want) {
      rc = SSL_write(ssl_, iov.iov_base, static_cast<int>(want));
    } else {
      // Small pieces (replies in separate blocks) go out as one record, not one each.
      char scratch[kRecordBytes];
      plain->CopyTo(scratch, want);
      rc = SSL_write(ssl_, scratch, static_cast<int>(want));
    }
    if (rc <= 0) {
      std::string text = TakeOpenSslErrors();
      *err = fmt::format("TLS write: {}", text.empty() ? "refused by OpenSSL" : text);
      return false;
    }
    plain->Skip(static_cast<size_t>(rc));
    done += static_cast<size_t>(rc);
  }
  return true;
}

bool TlsChannel::ReleaseBuffers() {
  // (Refused while a buffer holds a partial record: kept until the next idle check.)
  return SSL_free_buffers(ssl_) == 1;
}

void TlsChannel::Shutdown() {
  if (shut_ || !done_) return;
  shut_ = true;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // queues close_notify in wire_; the peer's is not waited for
  ERR_clear_error();
}

}  // namespace trpc::detail
