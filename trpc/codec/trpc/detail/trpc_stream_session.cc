#include "trpc/codec/trpc/detail/trpc_stream_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "trpc/base/logging.h"
#include "trpc/codec/trpc/detail/stream_frame.h"

namespace trpc::detail {

namespace {

// Our own frames are small and well-formed: they fail to encode only past the 4 GiB size
// field, which SendMessage checks for the one frame that can be that large.
void Must(bool ok, const std::string& err) {
  if (!ok)
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "trpc stream: cannot encode a frame: {}", err);
}

void WriteReset(uint32_t id, int32_t ret, const std::string& msg, ChainBuffer* out) {
  TrpcStreamClose c;
  c.close_type = 1;
  c.ret = ret;
  c.msg = msg;
  std::string err;
  Must(WriteTrpcStreamClose(id, c, out, &err), err);
}

}  // namespace

bool SendTrpcStreamMessage(TrpcStreamTable* table, uint32_t id, ChainBuffer&& msg, ChainBuffer* out,
                           std::string* err) {
  TrpcStreamState* st = table->Find(id);
  if (st == nullptr) {
    *err = fmt::format("stream {} has ended", id);
    return false;
  }
  if (msg.size() + kTrpcFrameHeaderSize > kTrpcMaxFrameSize) {
    *err = fmt::format("a {}-byte message does not fit a frame", msg.size());
    return false;
  }
  if (!st->OnSendData(msg.size(), err)) return false;
  return WriteTrpcStreamData(id, std::move(msg), out, err);
}

void ReturnTrpcStreamCredit(TrpcStreamTable* table, uint32_t id, size_t n, ChainBuffer* out) {
  TrpcStreamState* st = table->Find(id);
  if (st == nullptr) return;
  if (uint32_t credit = st->OnConsumed(n); credit != 0) {
    std::string err;
    Must(WriteTrpcStreamFeedback(id, credit, out, &err), err);
  }
}

bool TrpcServerStreamSession::OnFrame(ChainBuffer&& frame, ServerStreamHost* host, ChainBuffer* out,
                                      std::string* err) {
  TrpcStreamFrame f;
  if (!ReadTrpcStreamFrame(std::move(frame), &f, err)) return false;
  const uint32_t id = f.stream_id;
  switch (table_.OnFrame(f.type, id, err)) {
    case TrpcStreamTable::Verdict::kCloseConnection:
      return false;
    case TrpcStreamTable::Verdict::kDrop:
      return true;
    case TrpcStreamTable::Verdict::kResetStream: {
      // Over the cap: refused as an overloaded call is (ret 22), in the INIT's answer.
      TrpcStreamInit answer;
      answer.has_response_meta = true;
      answer.ret = kServerOverloadErr;
      answer.error_msg = *err;
      std::string e;
      Must(WriteTrpcStreamInit(id, answer, out, &e), e);
      return true;
    }
    case TrpcStreamTable::Verdict::kDeliver:
      break;
  }
  TrpcStreamState* st = table_.Find(id);
  std::string why;
  switch (f.type) {
    case TrpcStreamFrameType::kInit: {
      if (!st->OnRecvInit(f.init.init_window_size, 0, &why)) {
        ResetForViolation(id, why, host, out);
        return true;
      }
      RpcRequest head;
      head.caller = std::move(f.init.caller);
      head.callee = std::move(f.init.callee);
      head.func = std::move(f.init.func);
      head.message_type = f.init.message_type;
      head.trans_info = std::move(f.init.trans_info);
      head.content_type = f.init.content_type;
      head.content_encoding = f.init.content_encoding;
      head.frame_stream_id = id;
      opening_client_window_ = f.init.init_window_size;
      host->OnStreamOpen(id, std::move(head), out);
      return true;
    }
    case TrpcStreamFrameType::kData: {
      if (!st->OnRecvData(f.data.size(), &why)) {
        ResetForViolation(id, why, host, out);
        return true;
      }
      host->OnStreamMessage(id, std::move(f.data));
      return true;
    }
    case TrpcStreamFrameType::kFeedback: {
      const bool could_send = st->CanSend();
      if (!st->OnRecvFeedback(f.window_increment, &why)) {
        ResetForViolation(id, why, host, out);
        return true;
      }
      if (!could_send && st->CanSend()) host->OnStreamWritable(id);
      return true;
    }
    case TrpcStreamFrameType::kClose: {
      const bool reset = f.close.close_type == 1;
      if (!st->OnRecvClose(reset, &why)) {
        ResetForViolation(id, why, host, out);
        return true;
      }
      if (reset || f.close.ret != 0) {
        // The peer gave up on the stream: nothing more goes either way.
        Status status(f.close.ret != 0 ? f.close.ret : kServerSystemErr, f.close.func_ret,
                      f.close.msg.empty() ? "the client reset the stream" : f.close.msg);
        table_.Erase(id);
        host->OnStreamRemoteEnd(id, status);
        return true;
      }
      host->OnStreamRemoteEnd(id, kSuccStatus);
      // (Found again: what the host ran may have finished our side and forgotten the stream.)
      if (TrpcStreamState* again = table_.Find(id); again != nullptr) EraseIfFinished(id, again);
      return true;
    }
  }
  *err = "unknown stream frame type";
  return false;
}

void TrpcServerStreamSession::Accept(uint32_t id, ChainBuffer* out) {
  TrpcStreamState* st = table_.Find(id);
  if (st == nullptr) return;
  // A client that runs no flow control gets a window of 0 back, as tRPC-Go answers: then
  // neither side counts.
  const uint32_t window = opening_client_window_ == 0 ? 0 : window_;
  std::string err;
  if (!st->OnSendInit(window, &err)) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "trpc stream {}: {}", id, err);
    return;
  }
  TrpcStreamInit answer;
  answer.has_response_meta = true;  // empty: success
  answer.init_window_size =
      window == 0 ? 0 : (window < kTrpcStreamDefaultWindow ? kTrpcStreamDefaultWindow : window);
  Must(WriteTrpcStreamInit(id, answer, out, &err), err);
}

void TrpcServerStreamSession::Refuse(uint32_t id, const Status& status, ChainBuffer* out) {
  if (table_.Find(id) == nullptr) return;
  TrpcStreamInit answer;
  answer.has_response_meta = true;
  answer.ret = status.GetFrameworkRetCode() != 0 ? status.GetFrameworkRetCode() : kServerSystemErr;
  answer.error_msg = status.ErrorMessage();
  std::string err;
  Must(WriteTrpcStreamInit(id, answer, out, &err), err);
  table_.Erase(id);  // a refused stream has ended both ways
}

void TrpcServerStreamSession::Finish(uint32_t id, const Status& status, ChainBuffer* out) {
  TrpcStreamState* st = table_.Find(id);
  if (st == nullptr || st->local_closed()) return;
  // A framework error resets the stream with its code; success and an application error
  // close it, the latter with ret 0 and its code and text (as tRPC-Go ends them).
  const bool reset = status.GetFrameworkRetCode() != 0;
  std::string err;
  if (!st->OnSendClose(reset, &err)) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "trpc stream {}: {}", id, err);
    return;
  }
  TrpcStreamClose c;
  c.close_type = reset ? 1 : 0;
  c.ret = status.GetFrameworkRetCode();
  c.func_ret = status.GetFuncRetCode();
  c.msg = status.ErrorMessage();
  Must(WriteTrpcStreamClose(id, c, out, &err), err);
  if (reset) {
    table_.Erase(id);
  } else {
    EraseIfFinished(id, st);
  }
}

void TrpcServerStreamSession::ResetForViolation(uint32_t id, const std::string& why,
                                                ServerStreamHost* host, ChainBuffer* out) {
  WriteReset(id, kServerDecodeErr, why, out);
  table_.Erase(id);
  host->OnStreamRemoteEnd(id, Status(kServerDecodeErr, "stream reset: " + why));
}

void TrpcServerStreamSession::EraseIfFinished(uint32_t id, TrpcStreamState* st) {
  if (st->finished()) table_.Erase(id);
}

// ---- Client ---------------------------------------------------------------------------------

bool TrpcClientStreamSession::Open(const RpcRequest& head, uint32_t window, uint32_t* id,
                                   ChainBuffer* out, std::string* err) {
  if (!table_.OpenOutgoing(id, err)) return false;
  TrpcStreamState* st = table_.Find(*id);
  if (!st->OnSendInit(window, err)) {
    table_.Erase(*id);
    return false;
  }
  TrpcStreamInit init;
  init.caller = head.caller;
  init.callee = head.callee;
  init.func = head.func;
  init.message_type = head.message_type;
  init.trans_info = head.trans_info;
  init.init_window_size = window == 0 ? 0 : std::max(window, kTrpcStreamDefaultWindow);
  init.content_type = head.content_type;
  init.content_encoding = head.content_encoding;
  if (!WriteTrpcStreamInit(*id, init, out, err)) {
    table_.Erase(*id);
    return false;
  }
  return true;
}

bool TrpcClientStreamSession::OnFrame(ChainBuffer&& frame, ClientStreamHost* host, ChainBuffer* out,
                                      std::string* err) {
  TrpcStreamFrame f;
  if (!ReadTrpcStreamFrame(std::move(frame), &f, err)) return false;
  const uint32_t id = f.stream_id;
  switch (table_.OnFrame(f.type, id, err)) {
    case TrpcStreamTable::Verdict::kCloseConnection:
      return false;
    case TrpcStreamTable::Verdict::kDrop:
    case TrpcStreamTable::Verdict::kResetStream:  // (not given to a client)
      return true;
    case TrpcStreamTable::Verdict::kDeliver:
      break;
  }
  TrpcStreamState* st = table_.Find(id);
  std::string why;
  auto violation = [&](const std::string& what) {
    WriteReset(id, kClientDecodeErr, what, out);
    table_.Erase(id);
    host->OnStreamRemoteEnd(id, Status(kClientDecodeErr, "stream reset: " + what), true);
    return true;
  };
  switch (f.type) {
    case TrpcStreamFrameType::kInit: {
      const int32_t ret = f.init.ret;
      if (!st->OnRecvInit(f.init.init_window_size, ret, &why)) return violation(why);
      if (ret != 0) {
        table_.Erase(id);  // refused: the stream has ended
        host->OnStreamOpened(id, Status(ret, f.init.error_msg));
        return true;
      }
      host->OnStreamOpened(id, kSuccStatus);
      return true;
    }
    case TrpcStreamFrameType::kData:
      if (!st->OnRecvData(f.data.size(), &why)) return violation(why);
      host->OnStreamMessage(id, std::move(f.data));
      return true;
    case TrpcStreamFrameType::kFeedback: {
      const bool could_send = st->CanSend();
      if (!st->OnRecvFeedback(f.window_increment, &why)) return violation(why);
      if (!could_send && st->CanSend()) host->OnStreamWritable(id);
      return true;
    }
    case TrpcStreamFrameType::kClose: {
      const bool reset = f.close.close_type == 1;
      if (!st->OnRecvClose(reset, &why)) return violation(why);
      Status final(f.close.ret, f.close.func_ret, f.close.msg);
      if (reset) {
        if (final.OK()) final = Status(kStreamClientNetworkErr, "the server reset the stream");
        table_.Erase(id);
      } else if (st->finished()) {
        table_.Erase(id);
      }
      host->OnStreamRemoteEnd(id, final, reset);
      return true;
    }
  }
  *err = "unknown stream frame type";
  return false;
}

void TrpcClientStreamSession::Finish(uint32_t id, const Status& status, ChainBuffer* out) {
  TrpcStreamState* st = table_.Find(id);
  if (st == nullptr || st->local_closed()) return;
  const bool reset = !status.OK();
  std::string err;
  if (!st->OnSendClose(reset, &err)) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "trpc stream {}: {}", id, err);
    return;
  }
  TrpcStreamClose c;  // a half-close carries an empty meta, as tRPC-Go's
  if (reset) {
    c.close_type = 1;
    c.ret = status.GetFrameworkRetCode() != 0 ? status.GetFrameworkRetCode() : kClientCanceledErr;
    c.msg = status.ErrorMessage();
  }
  Must(WriteTrpcStreamClose(id, c, out, &err), err);
  if (reset || st->finished()) table_.Erase(id);
}

}  // namespace trpc::detail
