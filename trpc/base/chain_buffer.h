#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace trpc {

namespace detail {

/// A fixed-size, ref-counted block of bytes. Layout:
///
///   +----------------------+------------------------------------------+
///   | Block (refs, size,   | data: kBlockCapacity bytes                |
///   |  capacity, next)     |  [0, size) written   [size, capacity) free |
///   +----------------------+------------------------------------------+
///
/// Bytes below `size` are immutable once written; any number of BlockRefs may view them from
/// any thread. Bytes at and above `size` are appended to only by the thread that holds the block
/// as its thread-local write block (see chain_buffer.cc), so `size` needs no atomics: it is
/// published to other threads together with the ChainBuffer that views the bytes (moving a
/// buffer to another thread must itself synchronize, e.g. through a queue or a mutex).
struct Block {
  std::atomic<uint32_t> refs;
  uint32_t size;
  uint32_t capacity;
  Block* next_free;
  char* data() { return reinterpret_cast<char*>(this + 1); }
};

inline constexpr size_t kBlockAllocSize = 8192;
inline constexpr uint32_t kBlockCapacity = kBlockAllocSize - sizeof(Block);

/// Takes a block from the calling thread's pool (or the heap): refs = 1, size = 0.
Block* AcquireBlock();
/// Drops one reference; the last one returns the block to the calling thread's pool.
inline void ReleaseBlock(Block* b);
void FreeBlockSlow(Block* b);
/// Frees the calling thread's pool of free blocks (ReleaseThreadCaches in detail/memory.h, after
/// a burst).
void ReleasePooledBlocks();

inline void RefBlock(Block* b) { b->refs.fetch_add(1, std::memory_order_relaxed); }
inline void ReleaseBlock(Block* b) {
  // acq_rel: the thread that frees the block must see every other holder's reads finished.
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) FreeBlockSlow(b);
}

/// A view of [offset, offset + length) of a block. Holds one reference to the block.
struct BlockRef {
  Block* block;
  uint32_t offset;
  uint32_t length;
  const char* data() const { return block->data() + offset; }
};

/// A double-ended list of BlockRefs with room for two inline, so one- and two-block buffers
/// (most frames) never touch the heap for their bookkeeping.
class RefList {
 public:
  RefList() = default;
  RefList(RefList&& o) noexcept { Steal(o); }
  RefList& operator=(RefList&& o) noexcept {
    if (this != &o) {
      FreeStorage();
      Steal(o);
    }
    return *this;
  }
  ~RefList() { FreeStorage(); }

  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  BlockRef& operator[](size_t i) { return data_[begin_ + i]; }
  const BlockRef& operator[](size_t i) const { return data_[begin_ + i]; }
  BlockRef& front() { return data_[begin_]; }
  BlockRef& back() { return data_[end_ - 1]; }
  const BlockRef& back() const { return data_[end_ - 1]; }
  void push_back(const BlockRef& r) {
    if (end_ == cap_) Grow();
    data_[end_++] = r;
  }
  void pop_front() {
    if (++begin_ == end_) begin_ = end_ = 0;
  }
  void pop_back() {
    if (--end_ == begin_) begin_ = end_ = 0;
  }
  void clear() { begin_ = end_ = 0; }

 private:
  static constexpr uint32_t kInline = 2;
  void Grow();
  void FreeStorage() {
    if (data_ != inline_) delete[] data_;
  }
  void Steal(RefList& o) {
    if (o.data_ == o.inline_) {
      data_ = inline_;
      cap_ = kInline;
      begin_ = 0;
      end_ = o.end_ - o.begin_;
      for (uint32_t i = 0; i < end_; ++i) inline_[i] = o.inline_[o.begin_ + i];
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      begin_ = o.begin_;
      end_ = o.end_;
    }
    o.data_ = o.inline_;
    o.cap_ = kInline;
    o.begin_ = o.end_ = 0;
  }

  BlockRef* data_ = inline_;
  uint32_t begin_ = 0;
  uint32_t end_ = 0;
  uint32_t cap_ = kInline;
  BlockRef inline_[kInline];
};

}  // namespace detail

/// Typed metadata of the message a ChainBuffer holds, for a protocol whose two halves hand each
/// other messages through layers that only move buffers (gRPC: the codec and the connection's
/// HTTP/2 session pass a call's headers and status this way, typed, instead of encoding them into
/// the bytes and parsing them back). Opaque to every layer in between; the protocol that attached
/// it takes it back (ChainBuffer::TakeMeta) and knows its type.
class MessageMeta {
 public:
  virtual ~MessageMeta() = default;
  /// A copy, for ChainBuffer::Clone (a message sent again, e.g. a load client's pre-encoded
  /// request).
  virtual std::unique_ptr<MessageMeta> Copy() const = 0;

  /// Set by a protocol whose stream events travel as messages with a meta (gRPC's streams are
  /// HTTP/2 streams like its unary calls): the message belongs to a stream, not to a call
  /// (FrameCodec::IsStreamFrame).
  bool stream_event = false;
  /// Set by a protocol that compresses message by message (gRPC) on a received message that came
  /// compressed and was inflated before being handed up; a stream's reader reports it
  /// (stream::ServerStream::LastReadCompressed).
  bool arrived_compressed = false;
};

/// A byte sequence made of views into pooled, ref-counted blocks. Appending copies bytes into the
/// calling thread's current write block; cutting, moving and sharing never copy bytes.
///
/// A buffer may carry one MessageMeta: it moves with the buffer (move construction and
/// assignment), Clone() copies it, and it is freed with the buffer. Every byte operation
/// (Append, Cut, Skip, Clear...) leaves it alone: it belongs to the message, not to its bytes.
///
/// Thread contract: one ChainBuffer is used by one thread at a time; a buffer may be moved to
/// another thread through any synchronizing handoff. Blocks are shared safely across threads.
class ChainBuffer {
 public:
  ChainBuffer() = default;
  ChainBuffer(ChainBuffer&& o) noexcept
      : refs_(std::move(o.refs_)), size_(o.size_), meta_(std::move(o.meta_)) {
    o.size_ = 0;
  }
  ChainBuffer& operator=(ChainBuffer&& o) noexcept;
  ChainBuffer(const ChainBuffer&) = delete;
  ChainBuffer& operator=(const ChainBuffer&) = delete;
  ~ChainBuffer() {
    if (!refs_.empty()) ReleaseBlocks();
  }

  /// A second buffer viewing the same bytes (no copy; blocks gain a reference).
  ChainBuffer Clone() const;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t BlockCount() const { return refs_.size(); }
  /// Inline for the empty buffer, the common case of a buffer moved from (most destructions).
  void Clear() {
    if (!refs_.empty()) ReleaseBlocks();
    size_ = 0;
  }

  /// Copies bytes in, filling the thread's write block first.
  void Append(const void* data, size_t n);
  void Append(std::string_view s) { Append(s.data(), s.size()); }
  /// Moves all of `other` (a different buffer) to the end of this one without copying bytes.
  void Append(ChainBuffer&& other);
  /// Shares `other`'s bytes (adds references, no copy).
  void AppendShared(const ChainBuffer& other);

  /// Removes the first `n` bytes (n <= size()) and returns them as a buffer, without copying.
  ChainBuffer Cut(size_t n);
  /// Drops the first `n` bytes (n <= size()).
  void Skip(size_t n);

  /// Copies up to `n` bytes starting at `offset` into `dst`; returns the number copied.
  size_t CopyTo(void* dst, size_t n, size_t offset = 0) const;
  std::string ToString() const;

  /// Returns a pointer to the first `n` bytes (n <= size()): in place if they are contiguous,
  /// otherwise copied into `scratch` (which must hold n bytes).
  const char* Peek(size_t n, char* scratch) const {
    if (!refs_.empty() && refs_[0].length >= n) return refs_[0].data();
    CopyTo(scratch, n);
    return scratch;
  }
  /// The first contiguous span (empty if the buffer is empty).
  std::string_view FirstSpan() const {
    return refs_.empty() ? std::string_view() : std::string_view(refs_[0].data(), refs_[0].length);
  }

  /// Fills `iov` with up to `max_iov` spans starting at byte `offset`. Returns spans written.
  size_t ExportIovecs(iovec* iov, size_t max_iov, size_t offset = 0) const;

  /// Write region, for readv() and zero-copy serializers. PrepareWrite() describes free space of
  /// the calling thread's write blocks (at least `min_bytes`, at most `max_iov` spans); the caller
  /// fills a prefix of it and then calls CommitWrite(n) on the same thread before any other
  /// append on that thread.
  size_t PrepareWrite(iovec* iov, size_t max_iov, size_t min_bytes);
  void CommitWrite(size_t n);
  /// Returns the last `n` committed bytes of the write region to the free space (n must not
  /// exceed the bytes committed by the last CommitWrite on this thread, and those bytes must not
  /// have been cloned or shared since: later appends reuse them).
  void UncommitTail(size_t n);

  /// The message's typed metadata (see MessageMeta); null when none is attached.
  MessageMeta* meta() const { return meta_.get(); }
  void SetMeta(std::unique_ptr<MessageMeta> meta) { meta_ = std::move(meta); }
  std::unique_ptr<MessageMeta> TakeMeta() { return std::move(meta_); }
  /// No bytes and no metadata: nothing to send.
  bool Blank() const { return size_ == 0 && meta_ == nullptr; }

  // Access to the spans, for parsers and adapters.
  size_t SpanCount() const { return refs_.size(); }
  std::string_view Span(size_t i) const {
    return std::string_view(refs_[i].data(), refs_[i].length);
  }

 private:
  void AppendRef(detail::Block* b, uint32_t offset, uint32_t length);

  // Drops every block reference; leaves no spans.
  void ReleaseBlocks();

  detail::RefList refs_;
  size_t size_ = 0;
  std::unique_ptr<MessageMeta> meta_;
};

}  // namespace trpc
