#include "trpc/client/client_stream.h"

#include <string>
#include <utility>

#include "trpc/codec/detail/message_body.h"
#include "trpc/codec/detail/stream_session.h"
#include "trpc/transport/detail/stream_core.h"

namespace trpc::stream {

Status ClientStream::Read(google::protobuf::MessageLite* msg, int64_t timeout_ms) const {
  if (core_ == nullptr) return Status(kStreamClientNetworkErr, "the stream is not open");
  ChainBuffer bytes;
  if (Status st = core_->Read(&bytes, timeout_ms); !st.OK()) return st;
  std::string err;
  if (!ParseEncodedBody(bytes, core_->content_type(), core_->encoding(), core_->max_message_bytes(),
                        msg, &err)) {
    return Status(kClientDecodeErr, std::move(err));
  }
  return kSuccStatus;
}

Status ClientStream::Encode(const google::protobuf::MessageLite& msg, const WriteOptions& opts,
                            ChainBuffer* out) const {
  std::string err;
  if (!SerializeEncodedBody(msg, core_->content_type(), core_->encoding(), out, &err)) {
    return Status(kClientEncodeErr, std::move(err));
  }
  AttachWriteOptions(opts, out);  // (to the protocol's stream session)
  return kSuccStatus;
}

Status ClientStream::Write(const google::protobuf::MessageLite& msg) const {
  return Write(msg, WriteOptions{});
}

Status ClientStream::Write(const google::protobuf::MessageLite& msg,
                           const WriteOptions& opts) const {
  if (core_ == nullptr) return Status(kStreamClientNetworkErr, "the stream is not open");
  ChainBuffer bytes;
  if (Status st = Encode(msg, opts, &bytes); !st.OK()) return st;
  return core_->Write(std::move(bytes));
}

Status ClientStream::WritesDone() const {
  if (core_ == nullptr) return Status(kStreamClientNetworkErr, "the stream is not open");
  core_->Finish(kSuccStatus);
  return kSuccStatus;
}

Status ClientStream::Finish() const {
  if (core_ == nullptr) return Status(kStreamClientNetworkErr, "the stream is not open");
  core_->Finish(kSuccStatus);
  for (;;) {
    ChainBuffer dropped;
    Status st = core_->Read(&dropped, -1);
    if (st.OK()) continue;
    Status final = core_->FinalStatus();
    if (st.StreamEof()) return final;
    return final.OK() ? st : final;
  }
}

Future<ChainBuffer> ClientStream::AsyncReadBytes(int64_t timeout_ms) const {
  if (core_ == nullptr) {
    return MakeExceptionFuture<ChainBuffer>(
        Status(kStreamClientNetworkErr, "the stream is not open"));
  }
  return core_->AsyncRead(timeout_ms);
}

Status ClientStream::Parse(const ChainBuffer& bytes, google::protobuf::MessageLite* msg) const {
  std::string err;
  if (!ParseEncodedBody(bytes, core_->content_type(), core_->encoding(), core_->max_message_bytes(),
                        msg, &err)) {
    return Status(kClientDecodeErr, std::move(err));
  }
  return kSuccStatus;
}

Future<> ClientStream::AsyncWrite(const google::protobuf::MessageLite& msg) const {
  return AsyncWrite(msg, WriteOptions{});
}

Future<> ClientStream::AsyncWrite(const google::protobuf::MessageLite& msg,
                                  const WriteOptions& opts) const {
  if (core_ == nullptr) {
    return MakeExceptionFuture<>(Status(kStreamClientNetworkErr, "the stream is not open"));
  }
  ChainBuffer bytes;
  if (Status st = Encode(msg, opts, &bytes); !st.OK()) return MakeExceptionFuture<>(std::move(st));
  return core_->AsyncWrite(std::move(bytes));
}

Future<Status> ClientStream::DrainToEnd() const {
  return core_->AsyncRead().Then([s = *this](Future<ChainBuffer>&& f) {
    if (!f.IsFailed()) return s.DrainToEnd();
    Status st = f.GetException();
    Status final = s.core_->FinalStatus();
    if (st.StreamEof()) return MakeReadyFuture<Status>(std::move(final));
    return MakeReadyFuture<Status>(final.OK() ? std::move(st) : std::move(final));
  });
}

Future<Status> ClientStream::AsyncFinish() const {
  if (core_ == nullptr) {
    return MakeReadyFuture<Status>(Status(kStreamClientNetworkErr, "the stream is not open"));
  }
  core_->Finish(kSuccStatus);
  return DrainToEnd();
}

namespace {
// What every handle of one stream shares: the last one to go cancels a stream still open.
struct Owner {
  std::shared_ptr<detail::StreamCore> core;
  std::shared_ptr<CancelSignal> cancel;  // the context's, with our subscription
  uint64_t subscription = 0;
  ~Owner() {
    if (cancel != nullptr) cancel->Unsubscribe(subscription);
    core->Abandon(Status(kClientCanceledErr, "the stream's last handle was dropped"));
  }
};
}  // namespace

ClientStream::ClientStream(std::shared_ptr<detail::StreamCore> core,
                           const std::shared_ptr<CancelSignal>& cancel) {
  auto owner = std::make_shared<Owner>();
  owner->core = std::move(core);
  if (cancel != nullptr) {
    owner->cancel = cancel;
    // Weak: the subscription must not keep the stream alive once its handles are gone.
    std::weak_ptr<detail::StreamCore> weak = owner->core;
    owner->subscription = cancel->Subscribe([weak](const Status& why) {
      if (auto c = weak.lock()) {
        c->Reset(Status(kClientCanceledErr,
                        "the call it was opened for was cancelled: " + why.ErrorMessage()));
      }
    });
  }
  detail::StreamCore* raw = owner->core.get();
  core_ = std::shared_ptr<detail::StreamCore>(std::move(owner), raw);
}

void ClientStream::Cancel() const {
  if (core_ != nullptr) core_->Reset(Status(kClientCanceledErr, "the client cancelled the stream"));
}

}  // namespace trpc::stream
