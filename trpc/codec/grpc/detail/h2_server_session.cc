#include "trpc/codec/grpc/detail/h2_server_session.h"

#include <vector>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/codec/grpc/detail/grpc_wire.h"

namespace trpc::grpc::detail {

int H2ServerSession::OnBeginFrame(uint8_t type, int32_t stream_id) {
  // RFC 9113 5.1.1: a new stream's id must be above every id the peer used before. nghttp2
  // ignores a HEADERS frame with a lower id that it no longer knows (it keeps no record of
  // closed streams), so the check is ours: such a frame is allowed only on a stream we reset
  // (the peer may have sent its trailers before our RST_STREAM arrived) or after our GOAWAY
  // (streams above its last id were dropped unseen); else it is a connection error.
  if (unopened_ != 0) {
    // The last new stream's HEADERS opened none (OnBeginHeaders): nghttp2 refused it, and its
    // RST_STREAM may not be out yet.
    KeepResetStream(unopened_);
    unopened_ = 0;
  }
  if (type != NGHTTP2_HEADERS || (stream_id & 1) == 0) return 0;
  if (stream_id > highest_peer_stream_) {
    highest_peer_stream_ = stream_id;
    unopened_ = stream_id;
    return 0;
  }
  if (!goaway_sent_ && nghttp2_session_find_stream(session_, stream_id) == nullptr &&
      reset_streams_.count(stream_id) == 0) {
    Terminate(NGHTTP2_PROTOCOL_ERROR, "HEADERS open a stream whose id is not above the last");
  }
  return 0;
}

void H2ServerSession::KeepResetStream(int32_t stream_id) {
  reset_streams_.insert(stream_id);
  // The oldest go first: a peer sends a reset stream's late frames within a round trip.
  if (reset_streams_.size() > kResetStreamsKept) reset_streams_.erase(reset_streams_.begin());
}

int H2ServerSession::OnBeginHeaders(int32_t stream_id) {
  if (stream_id == unopened_) unopened_ = 0;
  if (streams_.Find(stream_id) != nullptr) return 0;  // trailers
  if (held_bytes != 0 && held_bytes + kStreamStateBytes > held_allowance) {
    // The connection holds its share of the process's buffer bound already: no new stream
    // (REFUSED_STREAM: the client may retry it, here once we are below, or elsewhere).
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                      "gRPC: refusing new streams: the connection holds {} bytes (max_buffered_"
                      "bytes gives it {})",
                      held_bytes, held_allowance);
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  auto st = std::make_unique<Stream>();
  st->head = std::make_unique<ServerRequestMeta>();
  st->opened_ns = MonotonicNanos();
  st->state_bytes = kStreamStateBytes;
  held_bytes += kStreamStateBytes;
  streams_.Add(stream_id, std::move(st));
  return 0;
}

int H2ServerSession::OnHeader(int32_t stream_id, std::string_view name, std::string_view value) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr) return 0;
  if (int rv = 0; !CountHeader(s, name, value, &rv)) return rv;
  if (s->head == nullptr) return 0;
  s->state_bytes += name.size() + value.size() + 32;
  held_bytes += name.size() + value.size() + 32;
  ServerRequestMeta& h = *s->head;
  if (name == ":method") {
    h.method.assign(value);
  } else if (name == ":path") {
    h.path.assign(value);
  } else if (name == ":authority") {
    h.authority.assign(value);
  } else if (name == "content-type") {
    h.content_type.assign(value);
  } else if (name == "grpc-timeout") {
    h.timeout.assign(value);
  } else if (name == "grpc-encoding") {
    h.encoding.assign(value);
  } else if (name == "grpc-accept-encoding") {
    h.accept_encoding.assign(value);
  } else if (name[0] != ':' && name != "te" && name != "user-agent" &&
             name.substr(0, 5) != "grpc-") {
    h.metadata.emplace_back(name, value);
  }
  return 0;
}

void H2ServerSession::ReleaseData(Stream* s, int32_t stream_id) {
  Consume(true, stream_id, s->unconsumed);
  held_bytes -= s->unconsumed;
  s->unconsumed = 0;
}

int H2ServerSession::OnDataChunk(int32_t stream_id, const uint8_t* data, size_t len) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || s->too_large || s->answered || (s->handed_up && !s->streaming)) {
    Consume(s != nullptr, stream_id, len);  // not kept
    return 0;
  }
  if (s->streaming) {
    // Kept until the server consumes the message (StreamConsumed): the windows bound it.
    s->data.Append(data, len);
    s->unconsumed += len;
    held_bytes += len;
    StreamingData(s, stream_id);
    return 0;
  }
  // The 5-byte message prefix does not count against the limit.
  if (s->data.size() + len > options_.max_message_size + 5) {
    s->too_large = true;
    s->data.Clear();
    Consume(true, stream_id, len);
    ReleaseData(s, stream_id);
    AnswerError(s, stream_id, 8, TooLargeMessage());  // RESOURCE_EXHAUSTED
    return 0;
  }
  // Kept until the request is whole: the windows bound it.
  s->data.Append(data, len);
  s->unconsumed += len;
  held_bytes += len;
  return 0;
}

void H2ServerSession::OnStreamFrame(uint8_t type, uint8_t flags, int32_t stream_id) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr) return;
  if (type == NGHTTP2_HEADERS && s->head != nullptr && !s->answered && !s->streaming) {
    if (methods_ != nullptr) {
      auto it = methods_->streaming.find(s->head->path);
      if (it != methods_->streaming.end()) {
        if (it->second) OpenStreaming(s, stream_id);
      } else if (methods_->complete) {
        HandUpUnknown(s, stream_id);
        return;
      }
    }
  }
  if ((flags & NGHTTP2_FLAG_END_STREAM) == 0) return;
  if (s->streaming) {
    StreamingInputEnd(s, stream_id);
    return;
  }
  if (s->too_large || s->answered || s->head == nullptr) return;
  HandUp(s, stream_id);
}

// ---- Streaming calls ------------------------------------------------------------------------

void H2ServerSession::Emit(std::unique_ptr<ServerStreamEventMeta> event, ChainBuffer&& msg) {
  if (sink_ == nullptr) return;  // (outside Feed(): nobody is left to tell)
  msg.SetMeta(std::move(event));
  sink_->push_back(std::move(msg));
}

void H2ServerSession::OpenStreaming(Stream* s, int32_t stream_id) {
  ServerRequestMeta& h = *s->head;
  if (h.content_type.compare(0, 16, "application/grpc") != 0) {
    AnswerError(s, stream_id, 3, "content-type is not application/grpc");
    return;
  }
  s->streaming = true;
  ++open_streaming_;
  s->handed_up = true;  // (request_timeout_ms is for unary requests)
  s->encoding = h.encoding;
  s->accept_encoding = h.accept_encoding;
  s->cancelled = std::make_shared<CancelSignal>();
  h.cancelled = s->cancelled;
  h.stream_id = stream_id;
  held_bytes -= s->state_bytes - kStreamStateBytes;
  s->state_bytes = kStreamStateBytes;
  auto event = NewEvent(ServerStreamEventMeta::Kind::kOpen, stream_id);
  event->head = std::move(s->head);
  Emit(std::move(event));
}

void H2ServerSession::StreamingData(Stream* s, int32_t stream_id) {
  while (!s->remote_ended) {
    ChainBuffer msg;
    bool compressed = false;
    int code = 0;
    std::string why;
    switch (NextMessage(s, stream_id, s->encoding, &msg, &compressed, &code, &why)) {
      case MessageCut::kNeedMore:
        return;
      case MessageCut::kBad:
        FailStreaming(s, stream_id, code, why);
        return;
      case MessageCut::kMessage: {
        auto event = NewEvent(ServerStreamEventMeta::Kind::kMessage, stream_id);
        event->arrived_compressed = compressed;
        Emit(std::move(event), std::move(msg));
        break;
      }
    }
  }
}

void H2ServerSession::StreamingInputEnd(Stream* s, int32_t stream_id) {
  if (s->remote_ended) return;
  if (!s->data.empty()) {
    FailStreaming(s, stream_id, 13, "the stream ended inside a message");
    return;
  }
  s->remote_ended = true;
  Emit(NewEvent(ServerStreamEventMeta::Kind::kEnd, stream_id));
}

void H2ServerSession::FailStreaming(Stream* s, int32_t stream_id, int grpc_status,
                                    const std::string& message) {
  if (!s->remote_ended) {
    s->remote_ended = true;
    auto event = NewEvent(ServerStreamEventMeta::Kind::kEnd, stream_id);
    event->grpc_status = grpc_status;
    event->grpc_message = message;
    Emit(std::move(event));
  }
  // Nothing more is read: what it holds goes back (the connection's window matters still).
  s->data.Clear();
  GiveBack(s, stream_id, s->unconsumed);
  s->credit.clear();
  s->finished = true;
  if (s->answered || s->peer_reset) return;
  if (!s->headers_sent) {
    AnswerError(s, stream_id, grpc_status, message);
    return;
  }
  s->answered = true;
  held_bytes -= s->out.size();
  s->out.Clear();
  s->trailers = {{"grpc-status", std::to_string(grpc_status)},
                 {"grpc-message", PercentEncode(message)}};
  s->more_data = false;
  s->reset_after_answer = true;
  ResumeData(stream_id, s);
}

void H2ServerSession::OnWindowOpened(int32_t stream_id) {
  if (open_streaming_ == 0) return;
  auto check = [this](int32_t id, Stream* s) {
    if (!s->want_writable || !StreamCanSend(id)) return;
    s->want_writable = false;
    Emit(NewEvent(ServerStreamEventMeta::Kind::kWritable, id));
  };
  if (stream_id != 0) {
    if (Stream* s = streams_.Find(stream_id)) check(stream_id, s);
    return;
  }
  for (auto& [id, st] : streams_.all()) check(id, st.get());
}

void H2ServerSession::StreamAccept(int32_t stream_id) {
  (void)stream_id;  // (the headers wait for the first message or the end)
}

bool H2ServerSession::StreamCanSend(int32_t stream_id) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->finished || s->answered) return false;
  return CanSendOn(s, stream_id);
}

void H2ServerSession::StreamSetCompression(int32_t stream_id, const std::string& encoding) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->headers_sent || s->answered) return;
  if (IsSupportedEncoding(encoding) && AcceptsEncoding(s->accept_encoding, encoding)) {
    s->out_encoding = encoding;
  }
}

void H2ServerSession::StreamSetMetadata(int32_t stream_id, Pairs&& fields, bool trailing) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->answered) return;
  Pairs& to = trailing ? s->trailing : s->initial;
  for (auto& kv : fields) to.push_back(std::move(kv));
}

void H2ServerSession::SubmitStreamHeaders(Stream* s, int32_t stream_id) {
  s->headers_sent = true;
  s->more_data = true;
  std::vector<nghttp2_nv> nv = {MakeNv(":status", "200"),
                                MakeNv("content-type", "application/grpc"),
                                MakeNv("grpc-accept-encoding", "identity,deflate,gzip")};
  if (!s->out_encoding.empty()) nv.push_back(MakeNv("grpc-encoding", s->out_encoding));
  for (const auto& [k, v] : s->initial) nv.push_back(MakeNv(k, v));
  nghttp2_data_provider prd{};
  prd.read_callback = ReadDataCallback;
  nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(), &prd);
}

bool H2ServerSession::StreamSend(int32_t stream_id, ChainBuffer&& msg, ChainBuffer* out,
                                 std::string* err) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->finished || s->answered) {
    *err = "the stream has ended";
    return false;
  }
  if (msg.size() > options_.max_message_size) {
    *err = "message larger than max_message_size";
    return false;
  }
  if (!QueueMessage(s, std::move(msg))) {
    *err = "the message could not be compressed";
    return false;
  }
  if (!s->headers_sent) {
    SubmitStreamHeaders(s, stream_id);
  } else {
    ResumeData(stream_id, s);
  }
  Drain(out);
  return true;
}

void H2ServerSession::StreamConsumed(int32_t stream_id, size_t n, ChainBuffer* out) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr) return;  // (closed: the connection's window was given back then)
  ConsumedOn(s, stream_id, n, out);
}

void H2ServerSession::StreamFinish(int32_t stream_id, int grpc_status, const std::string& message,
                                   ChainBuffer* out) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->finished) return;
  s->finished = true;
  if (s->answered) return;
  s->answered = true;
  // The client's further messages are not wanted: reset once the trailers are out (unless it
  // has half-closed by then).
  s->reset_after_answer = true;
  std::string code = std::to_string(grpc_status);
  std::string text = PercentEncode(message);
  if (!s->headers_sent) {
    // Trailers-Only.
    std::vector<nghttp2_nv> nv = {MakeNv(":status", "200"),
                                  MakeNv("content-type", "application/grpc"),
                                  MakeNv("grpc-status", code)};
    if (!text.empty()) nv.push_back(MakeNv("grpc-message", text));
    for (const auto& [k, v] : s->initial) nv.push_back(MakeNv(k, v));
    for (const auto& [k, v] : s->trailing) nv.push_back(MakeNv(k, v));
    nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(), nullptr);
  } else {
    s->trailers.emplace_back("grpc-status", std::move(code));
    if (!text.empty()) s->trailers.emplace_back("grpc-message", std::move(text));
    for (auto& kv : s->trailing) s->trailers.push_back(std::move(kv));
    s->more_data = false;
    ResumeData(stream_id, s);
  }
  Drain(out);
}

void H2ServerSession::HandUpUnknown(Stream* s, int32_t stream_id) {
  // Handed up at once, with no message: the server answers it (UNIMPLEMENTED, counted as any
  // unknown method is) without waiting for a body that a streaming client may hold back until
  // it has a response. Its DATA is dropped; once answered, the stream is reset if still open.
  ReleaseData(s, stream_id);
  s->cancelled = std::make_shared<CancelSignal>();
  s->head->cancelled = s->cancelled;
  s->head->stream_id = stream_id;
  s->handed_up = true;
  s->reset_after_answer = true;
  held_bytes -= s->state_bytes - kStreamStateBytes;
  s->state_bytes = kStreamStateBytes;
  ChainBuffer frame;
  frame.SetMeta(std::move(s->head));
  sink_->push_back(std::move(frame));
}

void H2ServerSession::HandUp(Stream* s, int32_t stream_id) {
  // The request is whole: it is handed up or answered here, either way its bytes are given
  // back to the windows (once handed up, the server's own limits bound it).
  ReleaseData(s, stream_id);
  if (s->head->content_type.compare(0, 16, "application/grpc") != 0) {
    AnswerError(s, stream_id, 3, "content-type is not application/grpc");
    return;
  }
  // Unary: exactly one length-prefixed message.
  ChainBuffer& d = s->data;
  uint8_t prefix[5];
  if (d.size() < 5) {
    AnswerError(s, stream_id, 13, "the request has no message (5-byte prefix missing)");
    return;
  }
  d.CopyTo(prefix, 5);
  const uint32_t len = (uint32_t{prefix[1]} << 24) | (uint32_t{prefix[2]} << 16) |
                       (uint32_t{prefix[3]} << 8) | prefix[4];
  if (len != d.size() - 5) {
    AnswerError(s, stream_id, 13, "a unary request must hold exactly one message");
    return;
  }
  d.Skip(5);
  s->head->compressed = (prefix[0] & 1) != 0;
  if (s->head->compressed) {
    const std::string& enc = s->head->encoding;
    if (enc.empty() || enc == "identity") {
      AnswerError(s, stream_id, 13, "compressed message without a grpc-encoding");
      return;
    }
    if (!IsSupportedEncoding(enc)) {
      AnswerError(s, stream_id, 12, "grpc-encoding '" + enc + "' is not supported");
      return;
    }
    ChainBuffer plain;
    std::string why;
    if (!Decompress(enc, d, options_.max_message_size, &plain, &why)) {
      AnswerError(s, stream_id, why.find("limit") != std::string::npos ? 8 : 13, why);
      return;
    }
    d = std::move(plain);
  }
  s->cancelled = std::make_shared<CancelSignal>();
  s->head->cancelled = s->cancelled;
  s->head->stream_id = stream_id;
  s->handed_up = true;
  // The headers leave with the request (the server's limits on requests bound them now).
  held_bytes -= s->state_bytes - kStreamStateBytes;
  s->state_bytes = kStreamStateBytes;
  ChainBuffer frame = std::move(d);
  frame.SetMeta(std::move(s->head));
  sink_->push_back(std::move(frame));
}

int H2ServerSession::OnStreamClose(int32_t stream_id, uint32_t error_code) {
  (void)error_code;
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr) return 0;
  if (s->streaming) {
    --open_streaming_;
    // Closed with our side still open: the client reset it (a cancel, or its deadline).
    if (!s->finished) {
      auto event = NewEvent(ServerStreamEventMeta::Kind::kEnd, stream_id);
      event->grpc_status = 1;  // CANCELLED
      event->grpc_message = "the client cancelled the stream";
      Emit(std::move(event));
      s->cancelled->Cancel(Status(kServerSystemErr, "the client cancelled the stream"));
    }
    // (Its handed-up messages are the server's to count; only a partial one is held here.)
    Consume(false, stream_id, s->unconsumed);
    held_bytes -= s->unconsumed + s->out.size() + s->state_bytes;
    streams_.Erase(stream_id);
    return 0;
  }
  // The stream's windows are gone with it; the connection's is given back.
  Consume(false, stream_id, s->unconsumed);
  held_bytes -= s->unconsumed + s->out.size() + s->state_bytes;
  // Closed before we answered: the client gave up (or reset it).
  if (!s->answered && s->cancelled != nullptr) {
    s->cancelled->Cancel(Status(kServerSystemErr, "the client cancelled the call"));
  }
  streams_.Erase(stream_id);
  return 0;
}

void H2ServerSession::OnConnectionClosed() {
  for (auto& [id, s] : streams_.all()) {
    if (!s->streaming && s->handed_up && !s->answered && s->cancelled != nullptr) {
      s->cancelled->Cancel(Status(kServerSystemErr, "the connection closed"));
    }
  }
}

void H2ServerSession::OnFrameSent(uint8_t type, uint8_t flags, int32_t stream_id,
                                  uint32_t error_code) {
  H2Session::OnFrameSent(type, flags, stream_id, error_code);
  if (type == NGHTTP2_GOAWAY) goaway_sent_ = true;
  if (type == NGHTTP2_RST_STREAM) KeepResetStream(stream_id);
  if (type == NGHTTP2_HEADERS && (flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    Stream* s = streams_.Find(stream_id);
    // (Not when the request had ended: the stream is closed now.)
    if (s != nullptr && s->reset_after_answer &&
        nghttp2_session_get_stream_remote_close(session_, stream_id) == 0) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR);
    }
  }
}

void H2ServerSession::OnDataEnd(int32_t stream_id, H2Stream* sent, uint32_t* data_flags) {
  auto* s = static_cast<Stream*>(sent);
  *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
  std::vector<nghttp2_nv> nv;
  nv.reserve(s->trailers.size());
  for (const auto& [k, v] : s->trailers) nv.push_back(MakeNv(k, v));
  nghttp2_submit_trailer(session_, stream_id, nv.data(), nv.size());
}

void H2ServerSession::ExpireSlowRequests() {
  if (options_.request_timeout_ms == 0) return;
  // Checked as input arrives, at most every 100 ms: a peer that sends nothing is closed by the
  // connection's idle_time; one that trickles bytes (PINGs, a byte of DATA) to keep requests
  // open gets here.
  const int64_t now = MonotonicNanos();
  if (now < next_expiry_check_ns_) return;
  next_expiry_check_ns_ = now + 100 * kNanosPerMilli;
  const int64_t limit = static_cast<int64_t>(options_.request_timeout_ms) * kNanosPerMilli;
  for (auto& [id, st] : streams_.all()) {
    if (!st->handed_up && !st->answered && st->opened_ns != 0 && now - st->opened_ns > limit) {
      AnswerError(st.get(), id, 4, "the request was not complete within request_timeout_ms");
    }
  }
}

void H2ServerSession::AnswerError(Stream* s, int32_t stream_id, int grpc_status,
                                  const std::string& message) {
  s->answered = true;
  std::string code = std::to_string(grpc_status);
  nghttp2_nv nv[] = {MakeNv(":status", "200"), MakeNv("content-type", "application/grpc"),
                     MakeNv("grpc-status", code), MakeNv("grpc-message", message)};
  nghttp2_submit_response(session_, stream_id, nv, 4, nullptr);
  // If the request is still coming, it is not wanted: once the answer is out (nghttp2 would
  // send a RST_STREAM submitted now before it), OnFrameSent resets the stream.
  s->reset_after_answer = true;
}

void H2ServerSession::EncodeOutput(ChainBuffer&& message, ChainBuffer* out) {
  Respond(std::move(message));
  Drain(out);
}

void H2ServerSession::Respond(ChainBuffer&& message) {
  std::unique_ptr<MessageMeta> meta = message.TakeMeta();
  auto* reply = static_cast<ServerReplyMeta*>(meta.get());  // (the server codec's, or none)
  if (reply == nullptr) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "gRPC: a response without its call (a bug)");
    return;
  }
  const int32_t stream_id = reply->stream_id;
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || s->answered) return;  // the client reset the stream meanwhile
  s->answered = true;
  std::string code = std::to_string(reply->grpc_status);
  std::vector<nghttp2_nv> nv;
  nv.reserve(6 + reply->initial.size() + reply->trailing.size());
  nv.push_back(MakeNv(":status", "200"));
  nv.push_back(MakeNv("content-type", "application/grpc"));
  if (reply->grpc_status != 0 && message.empty()) {
    // Trailers-Only: one HEADERS frame that ends the stream.
    nv.push_back(MakeNv("grpc-status", code));
    if (!reply->grpc_message.empty()) nv.push_back(MakeNv("grpc-message", reply->grpc_message));
    for (const auto& [k, v] : reply->initial) nv.push_back(MakeNv(k, v));
    for (const auto& [k, v] : reply->trailing) nv.push_back(MakeNv(k, v));
    nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(), nullptr);
    return;
  }
  if (!reply->encoding.empty()) nv.push_back(MakeNv("grpc-encoding", reply->encoding));
  nv.push_back(MakeNv("grpc-accept-encoding", "identity,deflate,gzip"));
  for (const auto& [k, v] : reply->initial) nv.push_back(MakeNv(k, v));
  s->out = std::move(message);
  held_bytes += s->out.size();  // until it fits the peer's windows
  s->trailers.reserve(2 + reply->trailing.size());
  s->trailers.emplace_back("grpc-status", std::move(code));
  if (!reply->grpc_message.empty()) {
    s->trailers.emplace_back("grpc-message", std::move(reply->grpc_message));
  }
  for (auto& kv : reply->trailing) s->trailers.push_back(std::move(kv));
  nghttp2_data_provider prd{};
  prd.read_callback = ReadDataCallback;
  nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(), &prd);
}

void H2ServerSession::OnShutdown(ChainBuffer* out) {
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  Drain(out);
}

}  // namespace trpc::grpc::detail
