#include "trpc/codec/grpc/detail/h2_flood_guard.h"

#include <algorithm>

#include "trpc/base/clock.h"

namespace trpc::grpc::detail {

namespace {
constexpr size_t kFrameHeaderSize = 3 + 1 + 1 + 4;
constexpr size_t kClientPrefaceSize = 24;  // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
constexpr uint8_t kData = 0x0, kPriority = 0x2, kSettings = 0x4, kPing = 0x6, kWindowUpdate = 0x8;
constexpr uint8_t kEndStream = 0x1, kAck = 0x1, kPadded = 0x8;
// WINDOW_UPDATEs that DATA frames sent may earn ahead (a peer does not bank them for later).
constexpr uint64_t kMaxWindowUpdateCredit = 1u << 16;
}  // namespace

bool H2FloodGuard::Bucket::Take(double rate) {
  const int64_t now = MonotonicNanos();
  tokens = last_ns == 0 ? rate
                        : std::min(rate, tokens + rate * static_cast<double>(now - last_ns) / 1e9);
  last_ns = now;
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

H2FloodGuard::H2FloodGuard(const FloodLimits& limits, bool server)
    : limits_(limits), skip_(server ? kClientPrefaceSize : 0) {}

void H2FloodGuard::OnDataSent() { Earn(2); }

void H2FloodGuard::Earn(uint64_t n) {
  window_update_credit_ = std::min(window_update_credit_ + n, kMaxWindowUpdateCredit);
}

const char* H2FloodGuard::Scan(std::string_view bytes) {
  while (!bytes.empty()) {
    if (skip_ > 0) {
      if (pad_length_next_) {
        pad_length_next_ = false;
        // Pad Length + padding fill the frame: no data (nghttp2 rejects a longer padding).
        const auto pad = static_cast<uint8_t>(bytes[0]);
        if (pad + 1u >= padded_length_ && !empty_data_.Take(limits_.empty_data_per_second)) {
          return "empty DATA flood";
        }
      }
      const size_t n = std::min(skip_, bytes.size());
      skip_ -= n;
      bytes.remove_prefix(n);
      continue;
    }
    const size_t n = std::min(kFrameHeaderSize - head_len_, bytes.size());
    std::copy_n(bytes.data(), n, head_ + head_len_);
    head_len_ += n;
    bytes.remove_prefix(n);
    if (head_len_ < kFrameHeaderSize) break;
    head_len_ = 0;
    const uint32_t length = (uint32_t{head_[0]} << 16) | (uint32_t{head_[1]} << 8) | head_[2];
    skip_ = length;
    if (const char* flood = OnFrame(length, head_[3], head_[4])) return flood;
  }
  return nullptr;
}

const char* H2FloodGuard::OnFrame(uint32_t length, uint8_t type, uint8_t flags) {
  switch (type) {
    case kData:
      if ((flags & kEndStream) != 0) return nullptr;  // an empty DATA may end a stream
      if ((flags & kPadded) != 0 && length > 0) {
        pad_length_next_ = true;  // decided by its first byte
        padded_length_ = length;
        return nullptr;
      }
      return length == 0 && !empty_data_.Take(limits_.empty_data_per_second) ? "empty DATA flood"
                                                                             : nullptr;
    case kPriority:
      return priority_.Take(limits_.priority_per_second) ? nullptr : "PRIORITY flood";
    case kWindowUpdate:
      if (window_update_credit_ > 0) {
        --window_update_credit_;
        return nullptr;
      }
      return window_update_.Take(limits_.window_update_per_second) ? nullptr
                                                                   : "WINDOW_UPDATE flood";
    case kPing:
      return (flags & kAck) != 0 || ping_.Take(limits_.ping_per_second) ? nullptr : "PING flood";
    case kSettings:
      return (flags & kAck) != 0 || settings_.Take(limits_.settings_per_second) ? nullptr
                                                                                : "SETTINGS flood";
    default:
      return nullptr;
  }
}

}  // namespace trpc::grpc::detail
