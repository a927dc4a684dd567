// Fuzz target: arbitrary bytes as one trpc stream frame (the first byte picks how the bytes are
// split into buffer blocks) must decode or fail cleanly, and whatever decodes must encode again
// and decode to the same frame.

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <string>

#include "trpc/codec/trpc/detail/stream_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 32;
  ++data;
  --size;
  trpc::ChainBuffer frame;
  for (size_t off = 0; off < size; off += chunk) frame.Append(data + off, std::min(chunk, size - off));
  trpc::detail::TrpcStreamFrame f;
  std::string err;
  if (!trpc::detail::ReadTrpcStreamFrame(std::move(frame), &f, &err)) {
    if (err.empty()) std::abort();  // every refusal says why
    return 0;
  }
  trpc::ChainBuffer out;
  bool ok = false;
  switch (f.type) {
    case trpc::detail::TrpcStreamFrameType::kInit:
      ok = trpc::detail::WriteTrpcStreamInit(f.stream_id, f.init, &out, &err);
      break;
    case trpc::detail::TrpcStreamFrameType::kData:
      ok = trpc::detail::WriteTrpcStreamData(f.stream_id, f.data.Clone(), &out, &err);
      break;
    case trpc::detail::TrpcStreamFrameType::kFeedback:
      ok = trpc::detail::WriteTrpcStreamFeedback(f.stream_id, f.window_increment, &out, &err);
      break;
    case trpc::detail::TrpcStreamFrameType::kClose:
      ok = trpc::detail::WriteTrpcStreamClose(f.stream_id, f.close, &out, &err);
      break;
  }
  if (!ok) std::abort();
  trpc::detail::TrpcStreamFrame again;
  if (!trpc::detail::ReadTrpcStreamFrame(std::move(out), &again, &err)) std::abort();
  if (again.type != f.type || again.stream_id != f.stream_id ||
      again.window_increment != f.window_increment || again.init.func != f.init.func ||
      again.init.trans_info != f.init.trans_info || again.close.msg != f.close.msg ||
      again.close.ret != f.close.ret || again.data.ToString() != f.data.ToString()) {
    std::abort();
  }
  return 0;
}
