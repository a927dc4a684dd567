#include "trpc/codec/grpc/detail/h2_client_session.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "trpc/base/logging.h"
#include "trpc/codec/grpc/detail/grpc_status.h"
#include "trpc/codec/grpc/detail/grpc_wire.h"

namespace trpc::grpc::detail {

namespace {

// A status code: 1 to 3 digits, else -1 (peers' values are not trusted to fit an int).
int ParseCode(std::string_view v) {
  int code = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), code);
  return v.empty() || v.size() > 3 || ec != std::errc() || end != v.data() + v.size() ? -1 : code;
}

}  // namespace

void H2ClientSession::BeforeFeed() {
  for (auto& f : late_) sink_->push_back(std::move(f));
  late_.clear();
}

int H2ClientSession::OnBeginFrame(uint8_t, int32_t) { return 0; }

int H2ClientSession::OnBeginHeaders(int32_t) { return 0; }  // streams exist from the request on

void H2ClientSession::OnStreamFrame(uint8_t type, uint8_t flags, int32_t stream_id) {
  // A unary call is handed up at its close; a streaming call's end is its END_STREAM.
  if ((flags & NGHTTP2_FLAG_END_STREAM) == 0) return;
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->remote_ended) return;
  const ClientReplyMeta& r = *s->reply;
  if (!s->data.empty()) {
    EndStreaming(s, stream_id, 13, "the stream ended inside a message", true);
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    return;
  }
  if (type != NGHTTP2_HEADERS || r.grpc_status < 0) {
    // Ended without a status: gRPC's rules take it from the HTTP status, else UNKNOWN.
    int code = r.http_status != 200 && r.http_status != 0 ? GrpcCodeOfHttpStatus(r.http_status) : 2;
    EndStreaming(s, stream_id, code, "the server ended the stream without a grpc-status", false);
    return;
  }
  EndStreaming(s, stream_id, r.grpc_status, PercentDecode(r.grpc_message), false);
}

void H2ClientSession::EndStreaming(Stream* s, int32_t stream_id, int grpc_status,
                                   std::string message, bool reset) {
  if (s->remote_ended) return;
  s->remote_ended = true;
  if (sink_ == nullptr) return;
  auto event =
      std::make_unique<ClientStreamEventMeta>(ClientStreamEventMeta::Kind::kEnd, stream_id);
  event->grpc_status = grpc_status;
  event->grpc_message = std::move(message);
  event->reset = reset;
  ChainBuffer frame;
  frame.SetMeta(std::move(event));
  sink_->push_back(std::move(frame));
}

void H2ClientSession::OnWindowOpened(int32_t stream_id) {
  if (open_streaming_ == 0 || sink_ == nullptr) return;
  auto check = [this](int32_t id, Stream* s) {
    if (!s->streaming || !s->want_writable || !StreamCanSend(id)) return;
    s->want_writable = false;
    ChainBuffer frame;
    frame.SetMeta(
        std::make_unique<ClientStreamEventMeta>(ClientStreamEventMeta::Kind::kWritable, id));
    sink_->push_back(std::move(frame));
  };
  if (stream_id != 0) {
    if (Stream* s = streams_.Find(stream_id)) check(stream_id, s);
    return;
  }
  for (auto& [id, st] : streams_.all()) check(id, st.get());
}

bool H2ClientSession::StreamOpen(const ClientRequestMeta& head, int32_t* stream_id,
                                 ChainBuffer* out, std::string* err) {
  if (no_new_calls) {
    *err = "the server takes no new streams on this connection (GOAWAY)";
    return false;
  }
  std::vector<nghttp2_nv> nv;
  nv.reserve(9 + head.metadata.size());
  nv.push_back(MakeNv(":method", "POST"));
  nv.push_back(MakeNv(":scheme", "http"));
  nv.push_back(MakeNv(":path", head.path));
  if (!head.authority.empty()) nv.push_back(MakeNv(":authority", head.authority));
  nv.push_back(MakeNv("content-type", "application/grpc"));
  nv.push_back(MakeNv("te", "trailers"));
  if (!head.timeout.empty()) nv.push_back(MakeNv("grpc-timeout", head.timeout));
  if (!head.encoding.empty()) nv.push_back(MakeNv("grpc-encoding", head.encoding));
  nv.push_back(MakeNv("grpc-accept-encoding", "identity,deflate,gzip"));
  nv.push_back(MakeNv("user-agent", "trpc-cpp-grpc"));
  for (const auto& [k, v] : head.metadata) nv.push_back(MakeNv(k, v));
  auto st = std::make_unique<Stream>();
  st->streaming = true;
  st->out_encoding = head.encoding;
  st->more_data = true;
  nghttp2_data_provider prd{};
  prd.read_callback = ReadDataCallback;
  const int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), &prd, nullptr);
  if (id < 0) {
    no_new_calls = true;
    *err = std::string("cannot open a stream: ") + nghttp2_strerror(id);
    return false;
  }
  streams_.Add(id, std::move(st));
  ++open_streaming_;
  *stream_id = id;
  Drain(out);
  return true;
}

bool H2ClientSession::StreamCanSend(int32_t stream_id) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->finished || s->remote_ended) return false;
  return CanSendOn(s, stream_id);
}

bool H2ClientSession::StreamSend(int32_t stream_id, ChainBuffer&& msg, ChainBuffer* out,
                                 std::string* err) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->finished || s->remote_ended) {
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
  ResumeData(stream_id, s);
  Drain(out);
  return true;
}

void H2ClientSession::StreamConsumed(int32_t stream_id, size_t n, ChainBuffer* out) {
  Stream* s = streams_.Find(stream_id);
  if (s != nullptr) ConsumedOn(s, stream_id, n, out);
}

void H2ClientSession::StreamFinish(int32_t stream_id, bool ok, ChainBuffer* out) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || !s->streaming || s->finished) return;
  s->finished = true;
  if (ok) {
    s->more_data = false;  // END_STREAM once what is queued has gone
    ResumeData(stream_id, s);
  } else {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
  }
  Drain(out);
}

int H2ClientSession::OnHeader(int32_t stream_id, std::string_view name, std::string_view value) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr) return 0;
  ClientReplyMeta& r = *s->reply;
  if (int rv = 0; !CountHeader(s, name, value, &rv)) {
    r.grpc_status = 8;  // RESOURCE_EXHAUSTED, as for a message over max_message_size
    r.grpc_message = "the response's header list is larger than max_header_list_size (" +
                     std::to_string(options_.max_header_list_size) +
                     " bytes): the client reset the stream";
    return rv;
  }
  if (name == ":status") {
    r.http_status = std::max(ParseCode(value), 0);
  } else if (name == "grpc-status") {
    int v = ParseCode(value);
    r.grpc_status = v < 0 ? 2 : v;  // unparsable: UNKNOWN
  } else if (name == "grpc-message") {
    r.grpc_message.assign(value);
  } else if (name == "grpc-encoding") {
    r.encoding.assign(value);
  } else if (name[0] != ':' && name != "content-type" && name.substr(0, 5) != "grpc-") {
    r.metadata.emplace_back(name, value);
  }
  return 0;
}

int H2ClientSession::OnDataChunk(int32_t stream_id, const uint8_t* data, size_t len) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr || s->too_large || (s->streaming && s->remote_ended)) {
    Consume(s != nullptr, stream_id, len);  // not kept
    return 0;
  }
  if (s->streaming) {
    // Kept until the caller reads the message (StreamConsumed): the windows bound it.
    s->data.Append(data, len);
    s->unconsumed += len;
    held_bytes += len;
    while (!s->remote_ended) {
      ChainBuffer msg;
      bool compressed = false;
      int code = 0;
      std::string why;
      MessageCut cut =
          NextMessage(s, stream_id, s->reply->encoding, &msg, &compressed, &code, &why);
      if (cut == MessageCut::kNeedMore) break;
      if (cut == MessageCut::kBad) {
        EndStreaming(s, stream_id, code, why + ": the client reset the stream", true);
        s->data.Clear();  // (its bytes stay held until the stream closes)
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
        break;
      }
      auto event =
          std::make_unique<ClientStreamEventMeta>(ClientStreamEventMeta::Kind::kMessage, stream_id);
      event->arrived_compressed = compressed;
      msg.SetMeta(std::move(event));
      sink_->push_back(std::move(msg));
    }
    return 0;
  }
  // A client's replies are bounded by its calls in flight: their windows reopen at once.
  Consume(true, stream_id, len);
  // The 5-byte message prefix does not count against the limit.
  if (s->data.size() + len > options_.max_message_size + 5) {
    s->too_large = true;
    s->data.Clear();
    s->reply->grpc_status = 8;  // RESOURCE_EXHAUSTED
    s->reply->grpc_message = TooLargeMessage();
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    return 0;
  }
  s->data.Append(data, len);
  return 0;
}

int H2ClientSession::OnStreamClose(int32_t stream_id, uint32_t error_code) {
  Stream* s = streams_.Find(stream_id);
  if (s == nullptr) return 0;
  if (s->streaming) {
    --open_streaming_;
    if (!s->remote_ended) {
      // Reset before the server's status: by the server, or by nghttp2 for a broken rule.
      int code = 13;  // INTERNAL
      std::string why = std::string("the stream was reset: ") + nghttp2_http2_strerror(error_code);
      if (error_code == NGHTTP2_CANCEL) {
        code = 1;  // CANCELLED
      } else if (error_code == NGHTTP2_REFUSED_STREAM) {
        code = 14;  // UNAVAILABLE (safe to retry)
      }
      EndStreaming(s, stream_id, code, std::move(why), true);
    }
    Consume(false, stream_id, s->unconsumed);
    held_bytes -= s->unconsumed + s->out.size();
    streams_.Erase(stream_id);
    return 0;
  }
  held_bytes -= s->out.size();
  std::unique_ptr<ClientReplyMeta> reply = std::move(s->reply);
  if (error_code != NGHTTP2_NO_ERROR && !s->peer_reset && reply->grpc_status < 0) {
    // We reset it (nghttp2 found the response broke HTTP/2's rules): not the server's doing.
    reply->grpc_status = 13;  // INTERNAL
    reply->grpc_message = std::string("the client reset the stream: ") +
                          nghttp2_http2_strerror(error_code) + " (the response broke HTTP/2)";
  }
  reply->rst_code = error_code;
  const uint32_t request_id = reply->request_id;
  ChainBuffer frame = std::move(s->data);
  frame.SetMeta(std::move(reply));
  stream_of_request_.erase(request_id);
  if (sink_ != nullptr) {
    sink_->push_back(std::move(frame));
  } else if (request_id != 0 && error_code != NGHTTP2_CANCEL) {
    // Closed while we were sending (our END_STREAM after the server had answered): handed up
    // with the next input. (A stream we reset was a call given up already.)
    late_.push_back(std::move(frame));
  }
  streams_.Erase(stream_id);
  return 0;
}

void H2ClientSession::EncodeOutput(ChainBuffer&& message, ChainBuffer* out) {
  Request(std::move(message));
  Drain(out);
}

void H2ClientSession::Request(ChainBuffer&& message) {
  std::unique_ptr<MessageMeta> meta = message.TakeMeta();
  const auto* call = static_cast<const ClientRequestMeta*>(meta.get());  // (the client codec's)
  if (call == nullptr) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "gRPC: a request without its call (a bug)");
    return;
  }
  std::vector<nghttp2_nv> nv;
  nv.reserve(10 + call->metadata.size());
  nv.push_back(MakeNv(":method", "POST"));
  nv.push_back(MakeNv(":scheme", "http"));
  nv.push_back(MakeNv(":path", call->path));
  if (!call->authority.empty())
    nv.push_back(MakeNv(":authority", call->authority));  // (empty is invalid)
  nv.push_back(MakeNv("content-type", "application/grpc"));
  nv.push_back(MakeNv("te", "trailers"));
  if (!call->timeout.empty()) nv.push_back(MakeNv("grpc-timeout", call->timeout));
  if (!call->encoding.empty()) nv.push_back(MakeNv("grpc-encoding", call->encoding));
  nv.push_back(MakeNv("grpc-accept-encoding", "identity,deflate,gzip"));
  nv.push_back(MakeNv("user-agent", "trpc-cpp-grpc"));
  for (const auto& [k, v] : call->metadata) nv.push_back(MakeNv(k, v));
  auto st = std::make_unique<Stream>();
  st->reply->request_id = call->request_id;
  st->out = std::move(message);
  held_bytes += st->out.size();
  nghttp2_data_provider prd{};
  prd.read_callback = ReadDataCallback;
  // nghttp2 reads the data (ReadData finds the stream by id) only after this returns.
  int32_t stream_id =
      nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), &prd, nullptr);
  if (stream_id < 0) {
    // Out of stream ids (or memory): the call ends by its timeout; later calls go to a new
    // connection.
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "gRPC: cannot open a stream: {}",
                      nghttp2_strerror(stream_id));
    no_new_calls = true;
    held_bytes -= st->out.size();
    return;
  }
  stream_of_request_[call->request_id] = stream_id;
  streams_.Add(stream_id, std::move(st));
}

void H2ClientSession::CancelCall(uint32_t request_id, ChainBuffer* out) {
  auto it = stream_of_request_.find(request_id);
  if (it == stream_of_request_.end()) return;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, it->second, NGHTTP2_CANCEL);
  Drain(out);
}

}  // namespace trpc::grpc::detail
