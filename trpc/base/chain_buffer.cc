#include "trpc/base/chain_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "trpc/base/logging.h"

namespace trpc {

namespace detail {

namespace {

// Per-thread state: a bounded pool of free blocks, and the write blocks that appends on this
// thread fill. Blocks freed on another thread go to that thread's pool; the bound keeps a thread
// that frees more than it allocates from hoarding memory.
constexpr size_t kMaxPooledBlocks = 256;
constexpr size_t kMaxWriteBlocks = 8;

struct ThreadBlocks {
  Block* free_list = nullptr;
  size_t free_count = 0;
  // write[0] is the current write block; write[1..n) are spares handed out by PrepareWrite.
  Block* write[kMaxWriteBlocks] = {};
  size_t write_count = 0;

  ~ThreadBlocks();
};

// Trivially destructible, so it stays valid while other thread_local destructors run.
thread_local bool tls_dead = false;
thread_local ThreadBlocks tls_blocks;

Block* NewBlock() {
  void* mem = std::malloc(kBlockAllocSize);
  if (mem == nullptr) throw std::bad_alloc();
  Block* b = static_cast<Block*>(mem);
  b->refs.store(1, std::memory_order_relaxed);
  b->size = 0;
  b->capacity = kBlockCapacity;
  b->next_free = nullptr;
  return b;
}

ThreadBlocks::~ThreadBlocks() {
  for (size_t i = 0; i < write_count; ++i) ReleaseBlock(write[i]);
  write_count = 0;
  tls_dead = true;
  while (free_list != nullptr) {
    Block* next = free_list->next_free;
    std::free(free_list);
    free_list = next;
  }
}

// Returns the current write block with free space, retiring full ones. A CommitWrite() can fill
// several spares completely, so more than one block may need retiring.
Block* CurrentWriteBlock() {
  ThreadBlocks& t = tls_blocks;
  while (t.write_count > 0 && t.write[0]->size == t.write[0]->capacity) {
    ReleaseBlock(t.write[0]);
    std::copy(t.write + 1, t.write + t.write_count, t.write);
    --t.write_count;
  }
  if (t.write_count > 0) return t.write[0];
  t.write[0] = AcquireBlock();
  t.write_count = 1;
  return t.write[0];
}

}  // namespace

Block* AcquireBlock() {
  if (!tls_dead) {
    ThreadBlocks& t = tls_blocks;
    if (t.free_list != nullptr) {
      Block* b = t.free_list;
      t.free_list = b->next_free;
      --t.free_count;
      b->refs.store(1, std::memory_order_relaxed);
      b->size = 0;
      b->next_free = nullptr;
      return b;
    }
  }
  return NewBlock();
}

void FreeBlockSlow(Block* b) {
  if (!tls_dead) {
    ThreadBlocks& t = tls_blocks;
    if (t.free_count < kMaxPooledBlocks) {
      b->next_free = t.free_list;
      t.free_list = b;
      ++t.free_count;
      return;
    }
  }
  std::free(b);
}

void ReleasePooledBlocks() {
  if (tls_dead) return;
  ThreadBlocks& t = tls_blocks;
  while (t.free_list != nullptr) {
    Block* next = t.free_list->next_free;
    std::free(t.free_list);
    t.free_list = next;
  }
  t.free_count = 0;
}

void RefList::Grow() {
  uint32_t n = end_ - begin_;
  if (begin_ > 0 && n < cap_ / 2) {
    // Plenty of room at the front: slide instead of growing.
    std::copy(data_ + begin_, data_ + end_, data_);
  } else {
    uint32_t cap = cap_ * 2;
    BlockRef* mem = new BlockRef[cap];
    std::copy(data_ + begin_, data_ + end_, mem);
    FreeStorage();
    data_ = mem;
    cap_ = cap;
  }
  begin_ = 0;
  end_ = n;
}

}  // namespace detail

using detail::Block;
using detail::BlockRef;

ChainBuffer& ChainBuffer::operator=(ChainBuffer&& o) noexcept {
  if (this != &o) {
    Clear();
    refs_ = std::move(o.refs_);
    size_ = o.size_;
    o.size_ = 0;
    meta_ = std::move(o.meta_);
  }
  return *this;
}

void ChainBuffer::ReleaseBlocks() {
  for (size_t i = 0; i < refs_.size(); ++i) detail::ReleaseBlock(refs_[i].block);
  refs_.clear();
}

ChainBuffer ChainBuffer::Clone() const {
  ChainBuffer out;
  out.AppendShared(*this);
  if (meta_ != nullptr) out.meta_ = meta_->Copy();
  return out;
}

void ChainBuffer::AppendRef(Block* b, uint32_t offset, uint32_t length) {
  if (length == 0) return;
  size_ += length;
  if (!refs_.empty()) {
    BlockRef& last = refs_.back();
    if (last.block == b && last.offset + last.length == offset) {
      last.length += length;
      return;
    }
  }
  detail::RefBlock(b);
  refs_.push_back(BlockRef{b, offset, length});
}

void ChainBuffer::Append(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    Block* b = detail::CurrentWriteBlock();
    uint32_t k = static_cast<uint32_t>(std::min<size_t>(n, b->capacity - b->size));
    std::memcpy(b->data() + b->size, p, k);
    AppendRef(b, b->size, k);
    b->size += k;
    p += k;
    n -= k;
  }
}

void ChainBuffer::Append(ChainBuffer&& other) {
  if (other.refs_.empty()) return;
  if (refs_.empty()) {
    refs_ = std::move(other.refs_);  // (the bytes only: each buffer keeps its own meta)
    size_ = other.size_;
    other.size_ = 0;
    return;
  }
  for (size_t i = 0; i < other.refs_.size(); ++i) {
    const BlockRef& r = other.refs_[i];
    BlockRef& last = refs_.back();
    if (last.block == r.block && last.offset + last.length == r.offset) {
      last.length += r.length;
      detail::ReleaseBlock(r.block);  // merged: drop the duplicate reference
    } else {
      refs_.push_back(r);
    }
  }
  size_ += other.size_;
  other.refs_.clear();
  other.size_ = 0;
}

void ChainBuffer::AppendShared(const ChainBuffer& other) {
  for (size_t i = 0; i < other.refs_.size(); ++i) {
    const BlockRef& r = other.refs_[i];
    AppendRef(r.block, r.offset, r.length);
  }
}

ChainBuffer ChainBuffer::Cut(size_t n) {
  ChainBuffer out;
  if (n >= size_) {
    out = std::move(*this);
    return out;
  }
  out.size_ = n;
  size_ -= n;
  while (n > 0) {
    BlockRef& f = refs_.front();
    if (f.length <= n) {
      n -= f.length;
      out.refs_.push_back(f);  // reference moves with the ref
      refs_.pop_front();
    } else {
      detail::RefBlock(f.block);
      out.refs_.push_back(BlockRef{f.block, f.offset, static_cast<uint32_t>(n)});
      f.offset += static_cast<uint32_t>(n);
      f.length -= static_cast<uint32_t>(n);
      n = 0;
    }
  }
  return out;
}

void ChainBuffer::Skip(size_t n) {
  n = std::min(n, size_);
  size_ -= n;
  while (n > 0) {
    BlockRef& f = refs_.front();
    if (f.length <= n) {
      n -= f.length;
      detail::ReleaseBlock(f.block);
      refs_.pop_front();
    } else {
      f.offset += static_cast<uint32_t>(n);
      f.length -= static_cast<uint32_t>(n);
      n = 0;
    }
  }
}

size_t ChainBuffer::CopyTo(void* dst, size_t n, size_t offset) const {
  char* out = static_cast<char*>(dst);
  size_t copied = 0;
  for (size_t i = 0; i < refs_.size() && copied < n; ++i) {
    const BlockRef& r = refs_[i];
    if (offset >= r.length) {
      offset -= r.length;
      continue;
    }
    size_t k = std::min<size_t>(r.length - offset, n - copied);
    std::memcpy(out + copied, r.data() + offset, k);
    copied += k;
    offset = 0;
  }
  return copied;
}

std::string ChainBuffer::ToString() const {
  std::string s(size_, '\0');
  CopyTo(s.data(), size_);
  return s;
}

size_t ChainBuffer::ExportIovecs(iovec* iov, size_t max_iov, size_t offset) const {
  size_t n = 0;
  for (size_t i = 0; i < refs_.size() && n < max_iov; ++i) {
    const BlockRef& r = refs_[i];
    if (offset >= r.length) {
      offset -= r.length;
      continue;
    }
    iov[n].iov_base = const_cast<char*>(r.data() + offset);
    iov[n].iov_len = r.length - offset;
    ++n;
    offset = 0;
  }
  return n;
}

size_t ChainBuffer::PrepareWrite(iovec* iov, size_t max_iov, size_t min_bytes) {
  detail::CurrentWriteBlock();
  auto& t = detail::tls_blocks;
  max_iov = std::min(max_iov, detail::kMaxWriteBlocks);
  size_t total = 0;
  size_t n = 0;
  while (n < max_iov && (n == 0 || total < min_bytes)) {
    if (n == t.write_count) t.write[t.write_count++] = detail::AcquireBlock();
    Block* b = t.write[n];
    iov[n].iov_base = b->data() + b->size;
    iov[n].iov_len = b->capacity - b->size;
    total += iov[n].iov_len;
    ++n;
  }
  return n;
}

void ChainBuffer::CommitWrite(size_t n) {
  auto& t = detail::tls_blocks;
  for (size_t i = 0; i < t.write_count && n > 0; ++i) {
    Block* b = t.write[i];
    uint32_t k = static_cast<uint32_t>(std::min<size_t>(n, b->capacity - b->size));
    AppendRef(b, b->size, k);
    b->size += k;
    n -= k;
  }
  TRPC_CHECK(n == 0, "CommitWrite beyond the prepared region");
}

void ChainBuffer::UncommitTail(size_t n) {
  while (n > 0 && !refs_.empty()) {
    BlockRef& last = refs_.back();
    uint32_t k = static_cast<uint32_t>(std::min<size_t>(n, last.length));
    // The bytes were the last written to this block on this thread, so hand them back.
    if (last.offset + last.length == last.block->size) last.block->size -= k;
    last.length -= k;
    size_ -= k;
    n -= k;
    if (last.length == 0) {
      detail::ReleaseBlock(last.block);
      refs_.pop_back();
    }
  }
}

}  // namespace trpc
