#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "trpc/codec/trpc/detail/stream_frame.h"
#include "trpc/codec/trpc/detail/stream_state.h"

namespace trpc::detail {

/// The trpc streams of one connection, as one end sees them: which ids are open, each one's
/// TrpcStreamState, the cap on open streams, and what to do with a frame that arrives. Ids are
/// the client's: it numbers its streams from 100 upward (as tRPC-Go and tRPC-Cpp do), so a
/// frame other than INIT for an id at or below the highest one seen, and not open, belongs to a
/// stream that has ended. An INIT always opens a new stream: each stream has exactly one.
///
/// Thread contract: none of its own; the connection's owner (its loop thread) serialises calls.
class TrpcStreamTable {
 public:
  static constexpr uint32_t kFirstClientStreamId = 100;

  /// What to do with a frame from the peer.
  enum class Verdict {
    kDeliver,          // to the stream: Find(id) has it (an accepted INIT has opened it)
    kDrop,             // for a stream that has ended: frames in flight when it did
    kResetStream,      // refuse this stream (RESET it with `*err`), keep the connection
    kCloseConnection,  // the peer broke the protocol: close the connection with `*err`
  };

  TrpcStreamTable(TrpcStreamState::Role role, uint32_t max_open_streams)
      : role_(role), max_open_(max_open_streams) {}

  /// Client: opens a new stream, its id in `*id`. False at the cap on open streams, or when
  /// the ids are used up (2^32 - 100 streams on one connection: open a new connection).
  bool OpenOutgoing(uint32_t* id, std::string* err);

  /// Decides about a frame of `type` for stream `id` that arrived. On the server, an INIT for an
  /// id not open opens the stream (kDeliver) unless the cap is reached (kResetStream). Frames for
  /// a stream that has ended are dropped; frames for an id never opened close the connection, as
  /// does an INIT for an id already open.
  Verdict OnFrame(TrpcStreamFrameType type, uint32_t id, std::string* err);

  /// The open stream `id`, or null.
  TrpcStreamState* Find(uint32_t id);
  const TrpcStreamState* Find(uint32_t id) const {
    return const_cast<TrpcStreamTable*>(this)->Find(id);
  }
  /// Forgets a stream (finished, or reset by either side).
  void Erase(uint32_t id) { streams_.erase(id); }

  size_t open_streams() const { return streams_.size(); }

 private:
  TrpcStreamState::Role role_;
  uint32_t max_open_;
  uint32_t next_id_ = kFirstClientStreamId;  // client: the next id to use
  uint32_t highest_seen_ = 0;                // server: the highest id a client has opened
  std::unordered_map<uint32_t, std::unique_ptr<TrpcStreamState>> streams_;
};

}  // namespace trpc::detail
