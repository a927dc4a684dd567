#include "trpc/codec/grpc/detail/grpc_stream_session.h"

#include <memory>
#include <utility>

#include "trpc/codec/grpc/detail/call_meta.h"
#include "trpc/codec/grpc/detail/grpc_metadata.h"
#include "trpc/codec/grpc/detail/grpc_status.h"
#include "trpc/codec/grpc/detail/grpc_wire.h"
#include "trpc/codec/grpc/detail/h2_client_session.h"
#include "trpc/codec/grpc/detail/h2_server_session.h"

namespace trpc::grpc::detail {

namespace {

int CodeOf(const Status& status) {
  return GrpcCodeOf(status.GetFrameworkRetCode(), status.GetFuncRetCode());
}

}  // namespace

bool GrpcServerStreamSession::CanSend(uint32_t id) const {
  return h2_ != nullptr && h2_->StreamCanSend(static_cast<int32_t>(id));
}

bool GrpcServerStreamSession::SendMessage(uint32_t id, ChainBuffer&& msg, ChainBuffer* out,
                                          std::string* err) {
  if (h2_ == nullptr) {
    *err = "no such stream";
    return false;
  }
  return h2_->StreamSend(static_cast<int32_t>(id), std::move(msg), out, err);
}

void GrpcServerStreamSession::Consumed(uint32_t id, size_t n, ChainBuffer* out) {
  if (h2_ != nullptr) h2_->StreamConsumed(static_cast<int32_t>(id), n, out);
}

void GrpcServerStreamSession::Finish(uint32_t id, const Status& status, ChainBuffer* out) {
  if (h2_ != nullptr) {
    h2_->StreamFinish(static_cast<int32_t>(id), CodeOf(status), status.ErrorMessage(), out);
  }
}

size_t GrpcServerStreamSession::open_streams() const {
  return h2_ != nullptr ? h2_->open_streaming() : 0;
}

void GrpcServerStreamSession::SetInitialMetadata(uint32_t id, TransInfo&& md) {
  if (auto it = md.find(std::string(kStreamCompressionKey)); it != md.end()) {
    if (h2_ != nullptr) h2_->StreamSetCompression(static_cast<int32_t>(id), it->second);
    md.erase(it);
  }
  Pairs fields;
  ToHeaders(md, &fields);
  if (h2_ != nullptr) h2_->StreamSetMetadata(static_cast<int32_t>(id), std::move(fields), false);
}

void GrpcServerStreamSession::SetTrailingMetadata(uint32_t id, TransInfo&& md) {
  Pairs fields;
  ToHeaders(md, &fields);
  if (h2_ != nullptr) h2_->StreamSetMetadata(static_cast<int32_t>(id), std::move(fields), true);
}

void GrpcServerStreamSession::Accept(uint32_t id, ChainBuffer* out) {
  (void)out;
  h2_->StreamAccept(static_cast<int32_t>(id));
}

void GrpcServerStreamSession::Refuse(uint32_t id, const Status& status, ChainBuffer* out) {
  h2_->StreamFinish(static_cast<int32_t>(id), CodeOf(status), status.ErrorMessage(), out);
}

bool GrpcServerStreamSession::OnFrame(ChainBuffer&& frame, ServerStreamHost* host, ChainBuffer* out,
                                      std::string* err) {
  std::unique_ptr<MessageMeta> meta = frame.TakeMeta();
  auto* event = static_cast<ServerStreamEventMeta*>(meta.get());  // (IsStreamFrame said so)
  if (event == nullptr) {
    *err = "gRPC: a stream event without its meta (a bug)";
    return false;
  }
  h2_ = event->session;
  const auto id = static_cast<uint32_t>(event->stream_id);
  switch (event->kind) {
    case ServerStreamEventMeta::Kind::kOpen: {
      RpcRequest head;
      RequestFromHead(std::move(*event->head), &head);
      host->OnStreamOpen(id, std::move(head), out);
      return true;
    }
    case ServerStreamEventMeta::Kind::kMessage:
      // A message that came compressed keeps its event as its meta: the stream's reader reports
      // it (only such messages: no allocation kept for the others).
      if (event->arrived_compressed) frame.SetMeta(std::move(meta));
      host->OnStreamMessage(id, std::move(frame));
      return true;
    case ServerStreamEventMeta::Kind::kEnd: {
      if (event->grpc_status == 0) {
        host->OnStreamRemoteEnd(id, kSuccStatus);
        return true;
      }
      int32_t ret = 0;
      int32_t func_ret = 0;
      FromGrpcCode(event->grpc_status, &ret, &func_ret);
      Status st(ret, func_ret, std::move(event->grpc_message));
      if (st.OK()) st.SetFrameworkRetCode(kServerSystemErr);
      host->OnStreamRemoteEnd(id, st);
      return true;
    }
    case ServerStreamEventMeta::Kind::kWritable:
      host->OnStreamWritable(id);
      return true;
  }
  return true;
}

// ---- Client ----

bool GrpcClientStreamSession::CanSend(uint32_t id) const {
  return h2_->StreamCanSend(static_cast<int32_t>(id));
}

bool GrpcClientStreamSession::SendMessage(uint32_t id, ChainBuffer&& msg, ChainBuffer* out,
                                          std::string* err) {
  return h2_->StreamSend(static_cast<int32_t>(id), std::move(msg), out, err);
}

void GrpcClientStreamSession::Consumed(uint32_t id, size_t n, ChainBuffer* out) {
  h2_->StreamConsumed(static_cast<int32_t>(id), n, out);
}

void GrpcClientStreamSession::Finish(uint32_t id, const Status& status, ChainBuffer* out) {
  h2_->StreamFinish(static_cast<int32_t>(id), status.OK(), out);
}

size_t GrpcClientStreamSession::open_streams() const { return h2_->open_streaming(); }

bool GrpcClientStreamSession::Open(const RpcRequest& head, uint32_t window, uint32_t* id,
                                   ChainBuffer* out, std::string* err) {
  (void)window;  // (HTTP/2's windows: the session's initial_window_size)
  ClientRequestMeta meta;
  meta.path = head.func;
  // The messages are compressed here, each flagged (the stream's core sends them plain).
  if (head.content_encoding == 1) {
    meta.encoding = "gzip";
  } else if (head.content_encoding == 3) {
    meta.encoding = "deflate";
  } else if (head.content_encoding != 0) {
    *err = "gRPC streams compress with gzip (1) or deflate (3), not type " +
           std::to_string(head.content_encoding);
    return false;
  }
  meta.authority = std::string(head.authority);
  // No grpc-timeout: a stream lasts as long as both ends keep it (the call's timeout bounds
  // only its open), as our trpc streams do; a server would otherwise end a long-lived stream
  // at the call timeout.
  ToHeaders(head.trans_info, &meta.metadata);
  int32_t stream_id = 0;
  if (!h2_->StreamOpen(meta, &stream_id, out, err)) return false;
  *id = static_cast<uint32_t>(stream_id);
  return true;
}

bool GrpcClientStreamSession::OnFrame(ChainBuffer&& frame, ClientStreamHost* host, ChainBuffer* out,
                                      std::string* err) {
  (void)out;
  std::unique_ptr<MessageMeta> meta = frame.TakeMeta();
  auto* event = static_cast<ClientStreamEventMeta*>(meta.get());  // (IsStreamFrame said so)
  if (event == nullptr) {
    *err = "gRPC: a stream event without its meta (a bug)";
    return false;
  }
  const auto id = static_cast<uint32_t>(event->stream_id);
  switch (event->kind) {
    case ClientStreamEventMeta::Kind::kMessage:
      if (event->arrived_compressed) frame.SetMeta(std::move(meta));
      host->OnStreamMessage(id, std::move(frame));
      return true;
    case ClientStreamEventMeta::Kind::kWritable:
      host->OnStreamWritable(id);
      return true;
    case ClientStreamEventMeta::Kind::kEnd: {
      Status st;
      if (event->grpc_status != 0) {
        int32_t ret = 0;
        int32_t func_ret = 0;
        FromGrpcCode(event->grpc_status, &ret, &func_ret);
        st = Status(ret, func_ret, std::move(event->grpc_message));
      }
      host->OnStreamRemoteEnd(id, st, event->reset);
      return true;
    }
  }
  return true;
}

}  // namespace trpc::grpc::detail
