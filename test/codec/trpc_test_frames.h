#pragma once

// Frames for the trpc codec tests: the golden bytes of docs/protocol.md, hand-made frames, and
// ways to lay bytes out in a ChainBuffer (one span, or many small ones).

#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/trpc/detail/frame_header.h"

namespace trpc::codec_test {

// "09 30 ab" -> the bytes 0x09 0x30 0xab. Spaces are ignored.
inline std::string Hex(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i < hex.size(); ++i) {
    if (hex[i] == ' ') continue;
    out.push_back(static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
    ++i;
  }
  return out;
}

inline constexpr std::string_view kCallee = "trpc.test.helloworld.Greeter";
inline constexpr std::string_view kFunc = "/trpc.test.helloworld.Greeter/SayHello";

// The worked example's request: SayHello(HelloRequest{msg: "hi"}), request_id 1, timeout 1000.
inline std::string GoldenRequestHeader() {
  return Hex("18 01  20 e8 07  32 1c") + std::string(kCallee) + Hex("3a 26") + std::string(kFunc);
}
inline std::string GoldenRequestBody() { return Hex("0a 02 68 69"); }
inline std::string GoldenRequest() {
  return Hex("09 30 00 00  00 00 00 5f  00 4b  00 00 00 00  00 00") + GoldenRequestHeader() +
         GoldenRequestBody();
}

// Its response: HelloReply{msg: "Hello, hi"}, request_id 1, ret 0.
inline std::string GoldenResponseBody() { return Hex("0a 09") + "Hello, hi"; }
inline std::string GoldenResponse() {
  return Hex("09 30 00 00  00 00 00 1d  00 02  00 00 00 00  00 00  18 01") + GoldenResponseBody();
}

// A frame with a correct fixed header around `header` and `payload`; `edit` may then change the
// fixed header's fields to make it wrong.
template <typename Edit>
std::string MakeFrame(std::string_view header, std::string_view payload, Edit edit) {
  TrpcFrameHeader h;
  h.total_size = static_cast<uint32_t>(kTrpcFrameHeaderSize + header.size() + payload.size());
  h.header_size = static_cast<uint16_t>(header.size());
  edit(&h);
  char fixed[kTrpcFrameHeaderSize];
  StoreTrpcFrameHeader(h, fixed);
  return std::string(fixed, sizeof(fixed)) + std::string(header) + std::string(payload);
}
inline std::string MakeFrame(std::string_view header, std::string_view payload) {
  return MakeFrame(header, payload, [](TrpcFrameHeader*) {});
}

inline ChainBuffer Buffer(std::string_view data) {
  ChainBuffer buf;
  buf.Append(data);
  return buf;
}

// `data` as spans of `piece` bytes. Each piece is separated from the next in its block by a byte
// appended to another buffer, so the spans cannot merge back into one.
inline ChainBuffer Fragmented(std::string_view data, size_t piece) {
  ChainBuffer buf;
  ChainBuffer gaps;
  for (size_t i = 0; i < data.size(); i += piece) {
    ChainBuffer part;
    part.Append(data.substr(i, piece));
    gaps.Append("|", 1);
    buf.Append(std::move(part));
  }
  return buf;
}

// Deterministic bytes (an LCG), so failures reproduce.
inline std::string Pattern(size_t n, uint32_t seed = 1) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

}  // namespace trpc::codec_test
