#include "trpc/codec/trpc/detail/stream_table.h"

#include <fmt/format.h>

namespace trpc::detail {

bool TrpcStreamTable::OpenOutgoing(uint32_t* id, std::string* err) {
  if (streams_.size() >= max_open_) {
    *err = fmt::format("{} streams are open on the connection, the most allowed", max_open_);
    return false;
  }
  if (next_id_ == 0) {  // wrapped: the peer would take a reused id for an ended stream's
    *err = "the connection has used up its stream ids";
    return false;
  }
  *id = next_id_++;
  streams_.emplace(*id, std::make_unique<TrpcStreamState>(role_));
  return true;
}

TrpcStreamState* TrpcStreamTable::Find(uint32_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

TrpcStreamTable::Verdict TrpcStreamTable::OnFrame(TrpcStreamFrameType type, uint32_t id,
                                                  std::string* err) {
  if (streams_.contains(id)) {
    if (type == TrpcStreamFrameType::kInit && role_ == TrpcStreamState::Role::kServer) {
      *err = fmt::format("INIT for stream {}, which is open", id);
      return Verdict::kCloseConnection;
    }
    return Verdict::kDeliver;
  }
  if (role_ == TrpcStreamState::Role::kClient) {
    // Our ids: one we handed out earlier has ended; one we never handed out is the peer's error.
    if (id >= kFirstClientStreamId && id < next_id_) return Verdict::kDrop;
    *err = fmt::format("a frame for stream {}, which this client never opened", id);
    return Verdict::kCloseConnection;
  }
  // A stream has one INIT, which opens it: an INIT for an id not open is a new stream even below
  // the highest id seen (a client that numbers streams on several threads may send their INITs
  // out of order). Any other frame below it belongs to a stream that has ended.
  if (type != TrpcStreamFrameType::kInit && id <= highest_seen_) return Verdict::kDrop;
  if (type != TrpcStreamFrameType::kInit) {
    *err = fmt::format("a {} frame for stream {}, which was never opened",
                       type == TrpcStreamFrameType::kData       ? "DATA"
                       : type == TrpcStreamFrameType::kFeedback ? "FEEDBACK"
                                                                : "CLOSE",
                       id);
    return Verdict::kCloseConnection;
  }
  if (id > highest_seen_) highest_seen_ = id;
  if (streams_.size() >= max_open_) {
    *err = fmt::format("{} streams are open on the connection, the most allowed", max_open_);
    return Verdict::kResetStream;
  }
  streams_.emplace(id, std::make_unique<TrpcStreamState>(role_));
  return Verdict::kDeliver;
}

}  // namespace trpc::detail
