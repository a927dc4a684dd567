#pragma once

#include <cstdint>
#include <string>

#include "trpc/codec/detail/client_streams.h"
#include "trpc/codec/detail/server_streams.h"
#include "trpc/codec/trpc/detail/stream_table.h"

namespace trpc::detail {

/// TrpcStreamEnds' sending and credit (below), out of line.
bool SendTrpcStreamMessage(TrpcStreamTable* table, uint32_t id, ChainBuffer&& msg, ChainBuffer* out,
                           std::string* err);
void ReturnTrpcStreamCredit(TrpcStreamTable* table, uint32_t id, size_t n, ChainBuffer* out);

/// What trpc's two sessions share: a connection's stream table and the per-stream operations of
/// StreamSession over it. `Session` is the end's interface (ServerStreamSession or
/// ClientStreamSession).
template <typename Session>
class TrpcStreamEnds : public Session {
 public:
  bool FlowControlled(uint32_t id) const override {
    const TrpcStreamState* st = table_.Find(id);
    return st != nullptr && st->flow_control();
  }
  bool CanSend(uint32_t id) const override {
    const TrpcStreamState* st = table_.Find(id);
    return st != nullptr && st->CanSend();
  }
  bool SendMessage(uint32_t id, ChainBuffer&& msg, ChainBuffer* out, std::string* err) override {
    return SendTrpcStreamMessage(&table_, id, std::move(msg), out, err);
  }
  void Consumed(uint32_t id, size_t n, ChainBuffer* out) override {
    ReturnTrpcStreamCredit(&table_, id, n, out);
  }
  size_t open_streams() const override { return table_.open_streams(); }

 protected:
  TrpcStreamEnds(TrpcStreamState::Role role, uint32_t max_streams) : table_(role, max_streams) {}
  TrpcStreamTable table_;
};

/// trpc's streams on one server connection (docs/protocol.md, section 6): the frames read with
/// ReadTrpcStreamFrame, checked against the connection's TrpcStreamTable and each stream's
/// TrpcStreamState, and turned into ServerStreamHost events; the server's answers written as
/// frames. A peer's protocol error on one stream resets that stream (a CLOSE with close_type 1
/// and ret 1) and tells the host; one that makes the connection untrustworthy (a frame for an
/// id never opened, a second INIT, a frame that does not parse) closes it.
///
/// The host's callbacks may re-enter the session (a handler's continuation that writes or
/// finishes runs inside them), so no stream state is held across one.
///
/// Thread contract: the connection's loop thread only (ServerStreamSession's).
class TrpcServerStreamSession final : public TrpcStreamEnds<ServerStreamSession> {
 public:
  /// `window`: what each stream announces it reads with (raised to 65535, as the protocol
  /// requires); `max_streams`: the cap on open streams, past which an INIT is refused.
  TrpcServerStreamSession(uint32_t max_streams, uint32_t window)
      : TrpcStreamEnds(TrpcStreamState::Role::kServer, max_streams), window_(window) {}

  bool OnFrame(ChainBuffer&& frame, ServerStreamHost* host, ChainBuffer* out,
               std::string* err) override;
  void Accept(uint32_t id, ChainBuffer* out) override;
  void Refuse(uint32_t id, const Status& status, ChainBuffer* out) override;
  void Finish(uint32_t id, const Status& status, ChainBuffer* out) override;

 private:
  // Resets `id` for a protocol violation by the peer: RESET frame, host told, stream forgotten.
  void ResetForViolation(uint32_t id, const std::string& why, ServerStreamHost* host,
                         ChainBuffer* out);
  // Forgets `id` once both sides have ended.
  void EraseIfFinished(uint32_t id, TrpcStreamState* st);

  uint32_t window_;
  // The client's window of the INIT being answered (0: it runs no flow control, so neither do
  // we, as tRPC-Go answers). Set by OnFrame for Accept(), which runs inside it.
  uint32_t opening_client_window_ = 0;
};

/// trpc's streams on one client connection: ids from 100, the client's INIT with its request
/// meta and window, and the server's frames checked against each stream's state. A server's
/// protocol error on one stream resets it (CLOSE, close_type 1, ret 1) and tells the host; one
/// that makes the connection untrustworthy (a frame for an id we never opened, one that does not
/// parse) closes it.
///
/// Thread contract: the connection's loop thread only (ClientStreamSession's).
class TrpcClientStreamSession final : public TrpcStreamEnds<ClientStreamSession> {
 public:
  explicit TrpcClientStreamSession(uint32_t max_streams)
      : TrpcStreamEnds(TrpcStreamState::Role::kClient, max_streams) {}

  bool Open(const RpcRequest& head, uint32_t window, uint32_t* id, ChainBuffer* out,
            std::string* err) override;
  bool OnFrame(ChainBuffer&& frame, ClientStreamHost* host, ChainBuffer* out,
               std::string* err) override;
  void Finish(uint32_t id, const Status& status, ChainBuffer* out) override;
};

}  // namespace trpc::detail
