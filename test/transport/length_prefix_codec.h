#pragma once

// A minimal FrameCodec for transport tests, so they need no protocol from trpc/codec/.
//
//   +----------------+------------------------------+
//   | length: 4 (BE) | payload: `length` bytes      |
//   +----------------+------------------------------+
//
// A frame is the whole thing (prefix included). Responses used with ClientConnection carry the
// request id in the first 4 payload bytes (big-endian): | length | id | rest |.

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/transport/frame_codec.h"

namespace trpc::testing {

inline void PutBe32(uint32_t v, char* out) {
  out[0] = static_cast<char>(v >> 24);
  out[1] = static_cast<char>(v >> 16);
  out[2] = static_cast<char>(v >> 8);
  out[3] = static_cast<char>(v);
}

inline uint32_t GetBe32(const char* p) {
  auto b = [p](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

class LengthPrefixCodec final : public FrameCodec {
 public:
  static constexpr size_t kPrefixSize = 4;
  static constexpr size_t kIdSize = 4;

  SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                    std::string* err) override {
    while (in->size() >= kPrefixSize) {
      char scratch[kPrefixSize];
      size_t total = kPrefixSize + GetBe32(in->Peek(kPrefixSize, scratch));
      if (total > max_frame_size) {
        *err = fmt::format("frame of {} bytes exceeds {}", total, max_frame_size);
        return SplitResult::kError;
      }
      if (in->size() < total) break;
      out->push_back(in->Cut(total));
    }
    return SplitResult::kOk;
  }

  bool PeekResponseId(const ChainBuffer& frame, uint32_t* request_id) override {
    if (frame.size() < kPrefixSize + kIdSize) return false;
    char buf[kPrefixSize + kIdSize];
    frame.CopyTo(buf, sizeof(buf));
    *request_id = GetBe32(buf + kPrefixSize);
    return true;
  }

  /// One frame carrying `payload`.
  static std::string Frame(std::string_view payload) {
    std::string s(kPrefixSize, '\0');
    PutBe32(static_cast<uint32_t>(payload.size()), s.data());
    s.append(payload);
    return s;
  }
  /// One frame whose payload is `id` followed by `body`.
  static std::string CallFrame(uint32_t id, std::string_view body) {
    std::string payload(kIdSize, '\0');
    PutBe32(id, payload.data());
    payload.append(body);
    return Frame(payload);
  }
  /// The body of a CallFrame (what follows the id).
  static std::string_view CallBody(std::string_view frame) {
    return frame.size() < kPrefixSize + kIdSize ? std::string_view()
                                                : frame.substr(kPrefixSize + kIdSize);
  }
};

}  // namespace trpc::testing
