#include "trpc/codec/trpc/detail/stream_frame.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <utility>

#include "trpc/codec/trpc/trpc.pb.h"

namespace trpc::detail {

namespace {

// Meta messages are small and come once per stream (INIT, CLOSE) or once per window's worth of
// data (FEEDBACK), so libprotobuf codes them: unlike the unary header, they are not per call.
template <typename Message>
std::string Serialize(const Message& m) {
  std::string s;
  {
    google::protobuf::io::StringOutputStream sos(&s);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);  // trans_info in key order
    m.SerializeToCodedStream(&cos);
  }
  return s;
}

bool AppendFrame(TrpcStreamFrameType type, uint32_t stream_id, std::string_view meta,
                 ChainBuffer* data, ChainBuffer* out, std::string* err) {
  const uint64_t total = kTrpcFrameHeaderSize + meta.size() + (data ? data->size() : 0);
  if (total > kTrpcMaxFrameSize) {
    *err = fmt::format("stream frame of {} bytes exceeds the 4 GiB limit of the size field",
                       total);
    return false;
  }
  TrpcFrameHeader h;
  h.data_frame_type = kTrpcStreamDataFrame;
  h.stream_frame_type = static_cast<uint8_t>(type);
  h.total_size = static_cast<uint32_t>(total);
  h.header_size = 0;  // stream frames carry their meta as the body
  h.stream_id = stream_id;
  char fixed[kTrpcFrameHeaderSize];
  StoreTrpcFrameHeader(h, fixed);
  out->Append(fixed, sizeof(fixed));
  if (!meta.empty()) out->Append(meta);
  if (data != nullptr) out->Append(std::move(*data));
  return true;
}

template <typename Map>
void ToMap(const TransInfo& from, Map* to) {
  for (const auto& [k, v] : from) (*to)[k] = v;
}

template <typename Map>
void FromMap(const Map& from, TransInfo* to) {
  to->clear();
  for (const auto& [k, v] : from) (*to)[k] = v;
}

template <typename Message>
bool ParseMeta(const ChainBuffer& body, const char* name, Message* m, std::string* err) {
  const std::string bytes = body.ToString();
  if (!m->ParseFromString(bytes)) {
    *err = fmt::format("cannot parse the {}-byte {} meta", bytes.size(), name);
    return false;
  }
  return true;
}

}  // namespace

bool CheckTrpcStreamFrameHeader(const TrpcFrameHeader& h, std::string* err) {
  if (h.magic != kTrpcMagic) {
    *err = fmt::format("bad magic 0x{:04x} (want 0x{:04x})", h.magic, kTrpcMagic);
    return false;
  }
  if (h.data_frame_type != kTrpcStreamDataFrame) {
    *err = fmt::format("data frame type {} is not a stream frame", h.data_frame_type);
    return false;
  }
  if (h.stream_frame_type < 1 || h.stream_frame_type > 4) {
    *err = fmt::format("unknown stream frame type {}", h.stream_frame_type);
    return false;
  }
  if (h.header_size != 0) {
    *err = fmt::format("stream frame with a {}-byte header (stream frames have none)",
                       h.header_size);
    return false;
  }
  if (h.stream_id == 0) {
    *err = "stream frame for stream id 0";
    return false;
  }
  if (h.total_size < kTrpcFrameHeaderSize) {
    *err = fmt::format("frame size {} is smaller than the fixed header", h.total_size);
    return false;
  }
  return true;
}

bool ReadTrpcStreamFrame(ChainBuffer&& frame, TrpcStreamFrame* out, std::string* err) {
  if (frame.size() < kTrpcFrameHeaderSize) {
    *err = fmt::format("frame of {} bytes is shorter than the fixed header", frame.size());
    return false;
  }
  char fixed[kTrpcFrameHeaderSize];
  const TrpcFrameHeader h = LoadTrpcFrameHeader(frame.Peek(kTrpcFrameHeaderSize, fixed));
  if (!CheckTrpcStreamFrameHeader(h, err)) return false;
  if (h.total_size != frame.size()) {
    *err = fmt::format("frame size field {} does not match the {} bytes of the frame", h.total_size,
                       frame.size());
    return false;
  }
  frame.Skip(kTrpcFrameHeaderSize);
  out->type = static_cast<TrpcStreamFrameType>(h.stream_frame_type);
  out->stream_id = h.stream_id;
  switch (out->type) {
    case TrpcStreamFrameType::kData:
      out->data = std::move(frame);
      return true;
    case TrpcStreamFrameType::kInit: {
      trpc::TrpcStreamInitMeta m;
      if (!ParseMeta(frame, "INIT", &m, err)) return false;
      TrpcStreamInit& in = out->init;
      const auto& rq = m.request_meta();
      in.caller = rq.caller();
      in.callee = rq.callee();
      in.func = rq.func();
      in.message_type = rq.message_type();
      FromMap(rq.trans_info(), &in.trans_info);
      in.has_response_meta = m.has_response_meta();
      in.ret = m.response_meta().ret();
      in.error_msg = m.response_meta().error_msg();
      in.init_window_size = m.init_window_size();
      in.content_type = m.content_type();
      in.content_encoding = m.content_encoding();
      return true;
    }
    case TrpcStreamFrameType::kFeedback: {
      trpc::TrpcStreamFeedBackMeta m;
      if (!ParseMeta(frame, "FEEDBACK", &m, err)) return false;
      out->window_increment = m.window_size_increment();
      return true;
    }
    case TrpcStreamFrameType::kClose: {
      trpc::TrpcStreamCloseMeta m;
      if (!ParseMeta(frame, "CLOSE", &m, err)) return false;
      TrpcStreamClose& c = out->close;
      c.close_type = m.close_type();
      c.ret = m.ret();
      c.msg = m.msg();
      c.message_type = m.message_type();
      FromMap(m.trans_info(), &c.trans_info);
      c.func_ret = m.func_ret();
      return true;
    }
  }
  *err = "unknown stream frame type";  // (CheckTrpcStreamFrameHeader refused it already)
  return false;
}

bool WriteTrpcStreamInit(uint32_t stream_id, const TrpcStreamInit& init, ChainBuffer* out,
                         std::string* err) {
  trpc::TrpcStreamInitMeta m;
  // A server's answer has no request meta (tRPC-Go sends none); a client's has one.
  if (!init.caller.empty() || !init.callee.empty() || !init.func.empty() ||
      init.message_type != 0 || !init.trans_info.empty()) {
    auto* rq = m.mutable_request_meta();
    rq->set_caller(init.caller);
    rq->set_callee(init.callee);
    rq->set_func(init.func);
    rq->set_message_type(init.message_type);
    ToMap(init.trans_info, rq->mutable_trans_info());
  }
  if (init.has_response_meta) {
    auto* rs = m.mutable_response_meta();
    rs->set_ret(init.ret);
    rs->set_error_msg(init.error_msg);
  }
  m.set_init_window_size(init.init_window_size);
  m.set_content_type(init.content_type);
  m.set_content_encoding(init.content_encoding);
  return AppendFrame(TrpcStreamFrameType::kInit, stream_id, Serialize(m), nullptr, out, err);
}

bool WriteTrpcStreamData(uint32_t stream_id, ChainBuffer&& data, ChainBuffer* out,
                         std::string* err) {
  return AppendFrame(TrpcStreamFrameType::kData, stream_id, {}, &data, out, err);
}

bool WriteTrpcStreamFeedback(uint32_t stream_id, uint32_t window_increment, ChainBuffer* out,
                             std::string* err) {
  trpc::TrpcStreamFeedBackMeta m;
  m.set_window_size_increment(window_increment);
  return AppendFrame(TrpcStreamFrameType::kFeedback, stream_id, Serialize(m), nullptr, out, err);
}

bool WriteTrpcStreamClose(uint32_t stream_id, const TrpcStreamClose& close, ChainBuffer* out,
                          std::string* err) {
  trpc::TrpcStreamCloseMeta m;
  m.set_close_type(close.close_type);
  m.set_ret(close.ret);
  m.set_msg(close.msg);
  m.set_message_type(close.message_type);
  ToMap(close.trans_info, m.mutable_trans_info());
  m.set_func_ret(close.func_ret);
  return AppendFrame(TrpcStreamFrameType::kClose, stream_id, Serialize(m), nullptr, out, err);
}

}  // namespace trpc::detail
