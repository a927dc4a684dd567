#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trpc/base/chain_buffer.h"

namespace trpc {

enum class SplitResult {
  kOk,        // zero or more frames were cut; the rest waits for more bytes
  kError,     // the bytes can never form a valid frame: close the connection
};

/// What the transport needs from a protocol: split frames off a byte stream, and (client side)
/// tell which call a response frame answers. Transport defines this seam; codecs implement it,
/// so transport never names a protocol. Implementations keep no mutable state: one instance
/// serves every connection of a service, on many threads at once.
class FrameCodec {
 public:
  virtual ~FrameCodec() = default;

  /// Cuts every complete frame at the front of `in` into `out` (appending). A frame whose
  /// declared size exceeds `max_frame_size` is an error, decided from its fixed header alone,
  /// before its payload is buffered. On kError, `*err` says what was wrong.
  virtual SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                            std::string* err) = 0;

  /// Client side, for protocols that multiplex calls on a connection: reads the request id a
  /// response frame answers. Returns false if the frame carries none or is malformed.
  virtual bool PeekResponseId(const ChainBuffer& frame, uint32_t* request_id) {
    (void)frame;
    (void)request_id;
    return false;
  }
};

}  // namespace trpc
