// Fuzz target: a peer's bytes fed to the TLS glue (detail::TlsChannel, what a server connection
// runs) over a socket pair, the way a connection feeds it. Must only ever end in a finished
// handshake, plaintext, or a clean failure — never a crash, an assert or a sanitizer report.
//
// The first byte picks the mode:
// - even: every byte is the peer's, from its first (a ClientHello, or anything else);
// - odd: a real client (OpenSSL) first completes a handshake with us, then the rest of the
//   input arrives as raw bytes on the established connection (records that do not decrypt,
//   alerts, garbage).
// TLS_FUZZ_CHECK=1 in the environment aborts when the odd mode's handshake did not complete: a
// check that the harness reaches the established state it means to fuzz.

#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "test/common/tls_certs.h"
#include "trpc/base/logging.h"
#include "trpc/transport/detail/tls_channel.h"
#include "trpc/transport/tls_context.h"

namespace {

using trpc::detail::TlsChannel;

struct Fixture {
  trpc::testing::TestCerts certs;
  std::shared_ptr<trpc::TlsContext> server;
  SSL_CTX* client = nullptr;

  Fixture() {
    trpc::log::SetLevel(trpc::log::Level::kOff);
    trpc::TlsConfig c;
    c.enable = true;
    c.cert_path = certs.Pem("server");
    c.private_key_path = certs.Key("server");
    std::string err;
    server = trpc::TlsContext::Create(c, trpc::TlsRole::kServer, {}, &err);
    client = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(client, SSL_VERIFY_NONE, nullptr);
  }
};

// Sends what the channel queued to the peer (a socket pair: the kernel takes it all).
void SendWire(TlsChannel* ch, int fd) {
  trpc::ChainBuffer& wire = ch->wire();
  std::string bytes(wire.size(), '\0');
  wire.CopyTo(bytes.data(), bytes.size());
  wire.Clear();
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Reads whatever plaintext the channel yields until it wants more, ends or fails.
void Drain(TlsChannel* ch, int fd) {
  char buf[4096];
  for (int i = 0; i < 1000; ++i) {
    std::string err;
    ssize_t n = ch->Read(buf, sizeof(buf), &err);
    SendWire(ch, fd);  // (alerts, a KeyUpdate answer)
    if (n <= 0) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* f = new Fixture;
  if (f->server == nullptr || size == 0) return 0;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) return 0;
  const bool handshake_first = data[0] & 1;
  ++data;
  --size;
  std::unique_ptr<TlsChannel> channel =
      TlsChannel::Create(f->server->NewSsl(""), sv[0], f->server.get());
  if (channel == nullptr) abort();
  TlsChannel& ch = *channel;
  std::string err;
  trpc::TlsFailure failure;
  if (handshake_first) {
    SSL* peer = SSL_new(f->client);
    SSL_set_fd(peer, sv[1]);
    SSL_set_connect_state(peer);
    bool peer_done = false;
    TlsChannel::Step step = TlsChannel::Step::kWantRead;
    for (int round = 0; round < 20 && !(peer_done && step == TlsChannel::Step::kDone); ++round) {
      if (!peer_done) {
        int rc = SSL_do_handshake(peer);
        peer_done = rc == 1;
        if (rc <= 0 && SSL_get_error(peer, rc) != SSL_ERROR_WANT_READ) break;
      }
      step = ch.Handshake(&err, &failure);
      SendWire(&ch, sv[0]);
      if (step == TlsChannel::Step::kFailed) break;
    }
    SSL_free(peer);  // (no close_notify: the socket stays open for the raw bytes)
    if (getenv("TLS_FUZZ_CHECK") != nullptr && !ch.handshake_done()) abort();
  }
  // The peer's bytes (a socket pair holds far more than a fuzz input), then its end.
  for (size_t off = 0; off < size;) {
    ssize_t n = ::send(sv[1], data + off, size - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::shutdown(sv[1], SHUT_WR);
  if (!ch.handshake_done()) {
    for (int i = 0; i < 100; ++i) {
      TlsChannel::Step step = ch.Handshake(&err, &failure);
      SendWire(&ch, sv[0]);
      if (step != TlsChannel::Step::kWantRead) break;
      // kWantRead with the peer's end already queued: the next call sees the EOF.
    }
  }
  if (ch.handshake_done()) Drain(&ch, sv[0]);
  ::close(sv[0]);
  ::close(sv[1]);
  return 0;
}
