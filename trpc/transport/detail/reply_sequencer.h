#pragma once

#include <cstdint>
#include <map>

#include "trpc/base/chain_buffer.h"

namespace trpc::detail {

/// Puts replies back into request order for protocols that have no request ids (HTTP/1.1
/// pipelining), when handlers finish out of order (fiber model, or a handler that replies later).
/// Each request takes a slot when it is handed up; its reply (or an empty buffer, for a request
/// that gets none) is put into that slot; Put() releases every reply whose earlier slots are all
/// filled. An interim answer (HTTP's "100 Continue") may be put for a slot before its reply; it
/// goes out as soon as every earlier reply has.
///
/// Owned by one connection; loop thread only. Slots are numbered from 1 (0 means "unordered").
class ReplySequencer {
 public:
  uint64_t Take() { return next_slot_++; }
  /// The slot the next Take() returns (the request being read).
  uint64_t Peek() const { return next_slot_; }

  /// The reply of `slot` may go out now, with nothing held back to release after it (the common
  /// case): counts it as sent and returns true. Otherwise changes nothing; use Put().
  bool PassInOrder(uint64_t slot) {
    if (slot != next_send_ || !waiting_.empty()) return false;
    ++next_send_;
    return true;
  }

  /// Files the reply of `slot` and appends to `ready` every reply now in order.
  void Put(uint64_t slot, ChainBuffer&& reply, ChainBuffer* ready) {
    if (slot == next_send_ && waiting_.empty()) {  // the common case: in order already
      ready->Append(std::move(reply));
      ++next_send_;
      return;
    }
    Entry& e = waiting_[slot];
    e.reply.Append(std::move(reply));
    e.done = true;
    Release(ready);
  }

  /// Files an interim answer for `slot`, sent before its reply and after every earlier one.
  void PutInterim(uint64_t slot, ChainBuffer&& interim, ChainBuffer* ready) {
    if (slot == next_send_) {
      ready->Append(std::move(interim));
      return;
    }
    waiting_[slot].reply.Append(std::move(interim));
  }

  /// Replies held back behind an unfinished earlier one.
  size_t held() const { return waiting_.size(); }

 private:
  struct Entry {
    ChainBuffer reply;  // interim bytes first, then the reply once done
    bool done = false;
  };

  void Release(ChainBuffer* ready) {
    for (auto it = waiting_.begin(); it != waiting_.end() && it->first == next_send_;) {
      ready->Append(std::move(it->second.reply));
      if (!it->second.done) break;  // only the interim part could go
      it = waiting_.erase(it);
      ++next_send_;
    }
  }

  uint64_t next_slot_ = 1;
  uint64_t next_send_ = 1;
  std::map<uint64_t, Entry> waiting_;
};

}  // namespace trpc::detail
