#pragma once

#include <openssl/bio.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/tls_peer.h"
#include "trpc/transport/tls_context.h"

namespace trpc::detail {

/// TLS on one connection's socket: OpenSSL reads the socket itself (through a BIO of ours that
/// notes when the socket ran dry) and writes every record into wire(), which the connection
/// sends as it sends plaintext, with one sendmsg per batch. So OpenSSL never waits to write:
/// only reads can want more, and EPOLLIN is the only event a handshake waits for.
///
/// Thread contract: the connection's loop thread.
class TlsChannel {
 public:
  enum class Step : uint8_t {
    kDone,      // the handshake finished
    kWantRead,  // wait for input (EPOLLIN), then call again
    kFailed,    // *err says why, *failure counts it
  };

  /// Takes ownership of `ssl` (from TlsContext::NewSsl) and does its IO on `fd`; null (and
  /// `ssl` freed) when OpenSSL cannot make the channel's BIO (out of memory). The first read
  /// looks at the peer's first bytes and names a peer that does not speak TLS.
  static std::unique_ptr<TlsChannel> Create(SSL* ssl, int fd, const TlsContext* context);
  ~TlsChannel();
  TlsChannel(const TlsChannel&) = delete;
  TlsChannel& operator=(const TlsChannel&) = delete;

  /// Advances the handshake as far as the input allows. Records to send land in wire().
  Step Handshake(std::string* err, TlsFailure* failure);
  bool handshake_done() const { return done_; }

  /// Reads plaintext: > 0 bytes; 0 at the peer's end (close_notify or EOF); -1 with errno =
  /// EAGAIN when the socket has no more, or -1 with *err for a broken stream (a bad record,
  /// a renegotiation attempt).
  ssize_t Read(void* buf, size_t len, std::string* err);
  /// After a Read that returned less than asked: whether another Read could find more without
  /// the next EPOLLIN (OpenSSL holds decrypted or undecrypted bytes, or the socket was not
  /// read dry), so the caller keeps reading instead of waiting for an edge.
  bool MayHaveMore() const;

  /// Encrypts up to about `max` bytes from the front of `plain` into records in wire().
  /// False with *err when OpenSSL refuses (the connection is then broken).
  bool Encrypt(ChainBuffer* plain, size_t max, std::string* err);
  /// Frees OpenSSL's record buffers (about 34 KiB) when it holds nothing in them: for an idle
  /// connection. They come back with the next read or write. True when freed.
  bool ReleaseBuffers();
  /// Queues close_notify in wire() (once).
  void Shutdown();

  /// Ciphertext to send, in order; the connection sends and skips it.
  ChainBuffer& wire() { return wire_; }
  /// Bytes read from the socket since the last call (ciphertext: what the traffic counters
  /// count).
  uint64_t TakeBytesRead() {
    uint64_t n = bytes_read_;
    bytes_read_ = 0;
    return n;
  }
  /// The peer's identity and the agreed parameters; valid once handshake_done().
  const std::shared_ptr<const TlsPeer>& peer() const { return peer_; }

  // For the BIO (tls_channel.cc).
  ssize_t SocketRead(char* buf, size_t len);
  void WireWrite(const char* data, size_t len) { wire_.Append(data, len); }

 private:
  TlsChannel(SSL* ssl, BIO* bio, int fd, const TlsContext* context);
  // The failure a handshake error stands for, from OpenSSL's error queue and the verify result.
  TlsFailure Classify(int ssl_error, std::string* err);
  void FillPeer();

  SSL* ssl_;
  int fd_;
  const TlsContext* context_;
  ChainBuffer wire_;
  std::shared_ptr<const TlsPeer> peer_;
  uint64_t bytes_read_ = 0;
  // The socket was read dry (EAGAIN, or a read came back shorter than asked): an edge comes
  // with the next bytes.
  bool socket_dry_ = false;
  bool eof_ = false;        // the socket read 0
  bool done_ = false;       // the handshake is over
  bool first_read_ = true;  // the server's first bytes are still to look at
  bool plaintext_ = false;  // ... and they were not a TLS handshake
  std::string plaintext_kind_;
  bool shut_ = false;
};

/// What a peer's first bytes say about it when they are not a TLS handshake ("an HTTP/1.1
/// client", "an HTTP/2 (h2c) client", "a trpc client"), or "" when they are one (0x16 0x03).
/// Needs at least 1 byte; `n` may be short.
std::string DescribePlaintext(const char* data, size_t n);
/// Whether the first bytes (at least 3) start a TLS handshake record.
bool LooksLikeTlsHandshake(const char* data, size_t n);

}  // namespace trpc::detail
