#pragma once

#include <cstdint>
#include <string>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/rpc_message.h"
#include "trpc/codec/trpc/detail/frame_header.h"

namespace trpc::detail {

// trpc stream frames (docs/protocol.md, section 6): data frame type 1, a stream frame type in
// byte 3, header size 0, the stream id in bytes 10-13, and a body that is the frame's meta
// message (INIT, FEEDBACK, CLOSE; trpc.proto's TrpcStream*Meta) or the message itself (DATA).
// Reading and writing whole frames; stateless functions, safe from any thread. Every check on
// peer bytes ends in false with a message, never an assert. (The stream state machine, flow
// control and the API above it are not here.)

enum class TrpcStreamFrameType : uint8_t {
  kInit = 1,
  kData = 2,
  kFeedback = 3,
  kClose = 4,
};

/// The default window of a stream, in DATA body bytes; a smaller INIT value is raised to it.
inline constexpr uint32_t kTrpcStreamDefaultWindow = 65535;

/// TrpcStreamInitMeta. The client's INIT fills the request fields; the server's answer fills
/// ret / error_msg (tRPC-Go's successful answer carries an empty response meta).
struct TrpcStreamInit {
  // request_meta
  std::string caller;
  std::string callee;
  std::string func;
  uint32_t message_type = 0;
  TransInfo trans_info;
  // response_meta: present on a server's INIT
  bool has_response_meta = false;
  int32_t ret = 0;
  std::string error_msg;
  uint32_t init_window_size = 0;  // 0: not given (flow control off for this side)
  uint32_t content_type = 0;
  uint32_t content_encoding = 0;
};

/// TrpcStreamCloseMeta. close_type 0 closes (success, or a business error with ret 0 and
/// func_ret/msg), 1 resets (a framework error in ret).
struct TrpcStreamClose {
  int32_t close_type = 0;
  int32_t ret = 0;
  std::string msg;
  uint32_t message_type = 0;
  TransInfo trans_info;
  int32_t func_ret = 0;
};

/// One decoded stream frame. Only the part its type uses is filled.
struct TrpcStreamFrame {
  TrpcStreamFrameType type = TrpcStreamFrameType::kData;
  uint32_t stream_id = 0;
  TrpcStreamInit init;                // kInit
  uint32_t window_increment = 0;      // kFeedback
  TrpcStreamClose close;              // kClose
  ChainBuffer data;                   // kData: the (possibly compressed) message bytes
};

/// True when `h` is a stream frame's fixed header that makes sense: data frame type 1, a known
/// stream frame type, header size 0 and a non-zero stream id. False with `*err` otherwise.
bool CheckTrpcStreamFrameHeader(const TrpcFrameHeader& h, std::string* err);

/// Decodes one whole stream frame (as SplitTrpcFrames cuts it). The DATA body is cut from the
/// frame, not copied.
bool ReadTrpcStreamFrame(ChainBuffer&& frame, TrpcStreamFrame* out, std::string* err);

/// Appends one frame to `out`. False (with `*err`, `out` untouched) only when the frame would
/// exceed the 4 GiB size field.
bool WriteTrpcStreamInit(uint32_t stream_id, const TrpcStreamInit& init, ChainBuffer* out,
                         std::string* err);
bool WriteTrpcStreamData(uint32_t stream_id, ChainBuffer&& data, ChainBuffer* out,
                         std::string* err);
bool WriteTrpcStreamFeedback(uint32_t stream_id, uint32_t window_increment, ChainBuffer* out,
                             std::string* err);
bool WriteTrpcStreamClose(uint32_t stream_id, const TrpcStreamClose& close, ChainBuffer* out,
                          std::string* err);

}  // namespace trpc::detail
