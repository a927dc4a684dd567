#include "trpc/codec/grpc/detail/h2_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/codec/grpc/detail/grpc_wire.h"

namespace trpc::grpc::detail {

struct H2Session::Stream {
  // Received.
  std::unique_ptr<ServerRequestMeta> head;  // server, until handed up
  int32_t http_status = 0;            // client: :status
  int32_t grpc_status = -1;           // client: from the trailers (or a Trailers-Only answer)
  std::string grpc_message;           // client
  std::string encoding;               // client: grpc-encoding
  std::vector<std::pair<std::string, std::string>> metadata;  // client: headers and trailers
  ChainBuffer data;
  size_t header_bytes = 0;
  bool too_large = false;           // the message passed max_message_size: its bytes are dropped
  bool answered = false;            // server: a response (or error) was submitted
  bool reset_after_answer = false;  // server: an early error answer; reset once it is sent
  bool handed_up = false;           // server: the request was cut (and `head` went with it)
  // Server: DATA bytes kept in `data` and not yet given back to the peer's flow-control windows
  // (nghttp2_session_consume): a client can have at most the connection's window in flight.
  size_t unconsumed = 0;
  bool peer_reset = false;  // the peer sent RST_STREAM (else a reset is our own)
  int64_t opened_ns = 0;    // server: when its HEADERS began (request_timeout_ms)
  // Server: what this stream's state counts in held_bytes: kStreamStateBytes, plus its headers
  // until they are handed up.
  size_t state_bytes = 0;
  std::shared_ptr<std::atomic<bool>> cancelled;  // server, once handed up
  // Client: the call it carries.
  uint32_t request_id = 0;
  // Sent: the DATA still to go, and (server) the trailers that follow it.
  ChainBuffer out;
  std::vector<std::pair<std::string, std::string>> trailers;
};

namespace {

H2Session* Self(void* user_data) { return static_cast<H2Session*>(user_data); }

int OnBeginFrameCb(nghttp2_session*, const nghttp2_frame_hd* hd, void* ud) {
  return Self(ud)->OnBeginFrame(hd->type, hd->stream_id);
}

int OnBeginHeadersCb(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
  return Self(ud)->OnBeginHeaders(frame->hd.stream_id);
}

int OnHeaderCb(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
               const uint8_t* value, size_t valuelen, uint8_t, void* ud) {
  return Self(ud)->OnHeader(frame->hd.stream_id, frame->hd.type,
                            {reinterpret_cast<const char*>(name), namelen},
                            {reinterpret_cast<const char*>(value), valuelen});
}

int OnDataChunkCb(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                  void* ud) {
  return Self(ud)->OnDataChunk(stream_id, data, len);
}

int OnFrameRecvCb(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
  uint32_t code = 0;
  if (frame->hd.type == NGHTTP2_RST_STREAM) code = frame->rst_stream.error_code;
  if (frame->hd.type == NGHTTP2_GOAWAY) code = frame->goaway.error_code;
  return Self(ud)->OnFrameRecv(frame->hd.type, frame->hd.flags, frame->hd.stream_id, code);
}

int OnStreamCloseCb(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* ud) {
  return Self(ud)->OnStreamClose(stream_id, error_code);
}

int OnFrameSendCb(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
  Self(ud)->OnFrameSent(frame->hd.type, frame->hd.flags, frame->hd.stream_id,
                        frame->hd.type == NGHTTP2_GOAWAY ? frame->goaway.error_code : 0);
  return 0;
}

ssize_t ReadDataCb(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                   uint32_t* data_flags, nghttp2_data_source*, void* ud) {
  return Self(ud)->ReadData(stream_id, buf, length, data_flags);
}

nghttp2_nv Nv(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

// A status code: 1 to 3 digits, else -1 (peers' values are not trusted to fit an int).
int ParseCode(std::string_view v) {
  int code = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), code);
  return v.empty() || v.size() > 3 || ec != std::errc() || end != v.data() + v.size() ? -1 : code;
}

}  // namespace

H2Session::H2Session(Role role, const H2Options& options)
    : role_(role), options_(options), flood_guard_(options.floods, role == Role::kServer) {
  encodes_output = true;
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, OnBeginFrameCb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, OnBeginHeadersCb);
  nghttp2_session_callbacks_set_on_header_callback(cbs, OnHeaderCb);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, OnDataChunkCb);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, OnFrameRecvCb);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, OnStreamCloseCb);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, OnFrameSendCb);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Windows reopen when we are done with the data (Consume), not when it arrives, so flow
  // control bounds what a peer can make us hold.
  nghttp2_option_set_no_auto_window_update(opt, 1);
  // Our own bound on the header list (OnHeader) replaces nghttp2's default of 64 KiB.
  nghttp2_option_set_max_send_header_block_length(opt, 1u << 20);
  if (role == Role::kServer) {
    nghttp2_option_set_stream_reset_rate_limit(opt, options_.max_rst_stream_burst,
                                               options_.max_rst_stream_per_second);
    nghttp2_session_server_new2(&session_, cbs, this, opt);
  } else {
    nghttp2_session_client_new2(&session_, cbs, this, opt);
  }
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (role == Role::kServer) {
    // A request is given back to the windows only when whole, so one of max_message_size must
    // fit in both, or it could never finish.
    const uint64_t need = std::min<uint64_t>(options_.max_message_size + 5, (1u << 31) - 1);
    options_.initial_window_size =
        static_cast<uint32_t>(std::max<uint64_t>(options_.initial_window_size, need));
    options_.connection_window_size =
        static_cast<uint32_t>(std::max<uint64_t>(options_.connection_window_size, need));
  }
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options_.initial_window_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, options_.max_header_list_size},
      // RFC 9218: no RFC 7540 priority tree. nghttp2 then skips PRIORITY frames at the cost
      // of parsing them (a PRIORITY flood costs little) and keeps no closed streams for it.
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  // (A server must not send ENABLE_PUSH.)
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, role == Role::kServer ? 4 : 5);
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                        static_cast<int32_t>(options_.connection_window_size));
}

H2Session::~H2Session() { nghttp2_session_del(session_); }

H2Session::Stream* H2Session::Find(int32_t stream_id) {
  // The callbacks of one frame (a HEADERS block calls OnHeader per field) ask for one stream in
  // a row: a one-entry cache saves the hash lookups.
  if (stream_id == last_id_ && last_ != nullptr) return last_;
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return nullptr;
  last_id_ = stream_id;
  last_ = it->second.get();
  return last_;
}

void H2Session::Erase(int32_t stream_id) {
  if (stream_id == last_id_) last_ = nullptr;
  streams_.erase(stream_id);
}

void H2Session::Drain(ChainBuffer* out) {
  for (;;) {
    const uint8_t* p = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &p);
    if (n <= 0) {
      if (n < 0 && fatal_.empty()) fatal_ = nghttp2_strerror(static_cast<int>(n));
      return;
    }
    out->Append(p, static_cast<size_t>(n));
  }
}

void H2Session::Terminate(uint32_t error_code, std::string why) {
  if (fatal_.empty()) fatal_ = std::move(why);
  nghttp2_session_terminate_session(session_, error_code);
}

SplitResult H2Session::Feed(ChainBuffer* in, std::vector<ChainBuffer>* out, std::string* err) {
  sink_ = out;
  for (auto& f : late_) out->push_back(std::move(f));
  late_.clear();
  for (size_t i = 0; i < in->SpanCount() && fatal_.empty(); ++i) {
    std::string_view span = in->Span(i);
    if (const char* flood = flood_guard_.Scan(span)) {
      Terminate(NGHTTP2_ENHANCE_YOUR_CALM, flood);  // (nghttp2 does not see the flood)
      break;
    }
    ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(span.data()),
                                          span.size());
    if (rv < 0) {
      fatal_ = nghttp2_strerror(static_cast<int>(rv));
      if (rv != NGHTTP2_ERR_BAD_CLIENT_MAGIC) {
        nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
      }
    }
  }
  in->Clear();
  if (role_ == Role::kServer && fatal_.empty()) ExpireSlowRequests();
  Drain(&immediate);  // (a stream that closes as its last bytes go is delivered too)
  sink_ = nullptr;
  if (!fatal_.empty()) {
    *err = "HTTP/2: " + fatal_;
    return SplitResult::kError;
  }
  if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
    closing = true;  // both sides are done (GOAWAY exchanged, streams closed)
  }
  return SplitResult::kOk;
}

int H2Session::OnBeginFrame(uint8_t type, int32_t stream_id) {
  // RFC 9113 5.1.1: a new stream's id must be above every id the peer used before. nghttp2
  // ignores a HEADERS frame with a lower id that it no longer knows (it keeps no record of
  // closed streams), so the check is ours: such a frame is allowed only on a stream we reset
  // (the peer may have sent its trailers before our RST_STREAM arrived) or after our GOAWAY
  // (streams above its last id were dropped unseen); else it is a connection error.
  if (role_ != Role::kServer) return 0;
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

void H2Session::KeepResetStream(int32_t stream_id) {
  reset_streams_.insert(stream_id);
  // The oldest go first: a peer sends a reset stream's late frames within a round trip.
  if (reset_streams_.size() > kResetStreamsKept) reset_streams_.erase(reset_streams_.begin());
}

int H2Session::OnBeginHeaders(int32_t stream_id) {
  if (stream_id == unopened_) unopened_ = 0;
  Stream* s = Find(stream_id);
  if (s == nullptr) {
    if (role_ == Role::kClient) return 0;  // a client's streams exist from the request on
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
    streams_.emplace(stream_id, std::move(st));
  }
  return 0;
}

int H2Session::OnHeader(int32_t stream_id, uint8_t frame_type, std::string_view name,
                        std::string_view value) {
  (void)frame_type;
  Stream* s = Find(stream_id);
  if (s == nullptr) return 0;
  s->header_bytes += name.size() + value.size() + 32;
  if (s->header_bytes > options_.max_header_list_size) {
    // Resets this stream; nghttp2 decodes the rest of the block (HPACK state) without us.
    if (role_ == Role::kClient) {
      s->grpc_status = 8;  // RESOURCE_EXHAUSTED, as for a message over max_message_size
      s->grpc_message = "the response's header list is larger than max_header_list_size (" +
                        std::to_string(options_.max_header_list_size) +
                        " bytes): the client reset the stream";
    }
    if (++header_strikes_ >= kMaxHeaderStrikes) {
      Terminate(NGHTTP2_ENHANCE_YOUR_CALM, "header lists over max_header_list_size");
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  if (role_ == Role::kServer) {
    if (s->head == nullptr || s->handed_up) return 0;
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
  if (name == ":status") {
    s->http_status = std::max(ParseCode(value), 0);
  } else if (name == "grpc-status") {
    int v = ParseCode(value);
    s->grpc_status = v < 0 ? 2 : v;  // unparsable: UNKNOWN
  } else if (name == "grpc-message") {
    s->grpc_message.assign(value);
  } else if (name == "grpc-encoding") {
    s->encoding.assign(value);
  } else if (name[0] != ':' && name != "content-type" && name.substr(0, 5) != "grpc-") {
    s->metadata.emplace_back(name, value);
  }
  return 0;
}

void H2Session::Consume(Stream* s, int32_t stream_id, size_t n) {
  if (n == 0) return;
  if (s != nullptr) {
    nghttp2_session_consume(session_, stream_id, n);
  } else {
    nghttp2_session_consume_connection(session_, n);
  }
}

void H2Session::ReleaseData(Stream* s, int32_t stream_id) {
  Consume(s, stream_id, s->unconsumed);
  held_bytes -= s->unconsumed;
  s->unconsumed = 0;
}

int H2Session::OnDataChunk(int32_t stream_id, const uint8_t* data, size_t len) {
  Stream* s = Find(stream_id);
  if (s == nullptr || s->too_large || s->answered) {
    Consume(s, stream_id, len);  // not kept
    return 0;
  }
  // The 5-byte message prefix does not count against the limit.
  if (s->data.size() + len > options_.max_message_size + 5) {
    s->too_large = true;
    s->data.Clear();
    Consume(s, stream_id, len);
    if (role_ == Role::kServer) ReleaseData(s, stream_id);
    std::string msg = "message larger than max_message_size (" +
                      std::to_string(options_.max_message_size) + " bytes)";
    if (role_ == Role::kServer) {
      AnswerError(s, stream_id, 8, msg);  // RESOURCE_EXHAUSTED
    } else {
      s->grpc_status = 8;
      s->grpc_message = msg;
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    }
    return 0;
  }
  s->data.Append(data, len);
  if (role_ == Role::kServer) {
    // Kept until the request is whole: the windows bound it.
    s->unconsumed += len;
    held_bytes += len;
  } else {
    Consume(s, stream_id, len);  // a client's replies are bounded by its calls in flight
  }
  return 0;
}

int H2Session::OnFrameRecv(uint8_t type, uint8_t flags, int32_t stream_id, uint32_t error_code) {
  (void)error_code;
  switch (type) {
    case NGHTTP2_GOAWAY:
      no_new_calls = true;  // the peer takes no new streams on this connection
      return 0;
    case NGHTTP2_RST_STREAM:
      if (Stream* s = Find(stream_id)) s->peer_reset = true;
      return 0;
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      break;
    default:
      return 0;
  }
  if (role_ != Role::kServer || (flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
  Stream* s = Find(stream_id);
  if (s == nullptr || s->too_large || s->answered || s->head == nullptr || s->handed_up) return 0;
  // The request is whole: it is handed up or answered here, either way its bytes are given
  // back to the windows (once handed up, the server's own limits bound it).
  ReleaseData(s, stream_id);
  if (s->head->content_type.compare(0, 16, "application/grpc") != 0) {
    AnswerError(s, stream_id, 3, "content-type is not application/grpc");
    return 0;
  }
  // Unary: exactly one length-prefixed message.
  ChainBuffer& d = s->data;
  uint8_t prefix[5];
  if (d.size() < 5) {
    AnswerError(s, stream_id, 13, "the request has no message (5-byte prefix missing)");
    return 0;
  }
  d.CopyTo(prefix, 5);
  const uint32_t len = (uint32_t{prefix[1]} << 24) | (uint32_t{prefix[2]} << 16) |
                       (uint32_t{prefix[3]} << 8) | prefix[4];
  if (len != d.size() - 5) {
    AnswerError(s, stream_id, 13, "a unary request must hold exactly one message");
    return 0;
  }
  d.Skip(5);
  s->head->compressed = (prefix[0] & 1) != 0;
  if (s->head->compressed) {
    const std::string& enc = s->head->encoding;
    if (enc.empty() || enc == "identity") {
      AnswerError(s, stream_id, 13, "compressed message without a grpc-encoding");
      return 0;
    }
    if (!IsSupportedEncoding(enc)) {
      AnswerError(s, stream_id, 12, "grpc-encoding '" + enc + "' is not supported");
      return 0;
    }
    ChainBuffer plain;
    std::string why;
    if (!Decompress(enc, d, options_.max_message_size, &plain, &why)) {
      AnswerError(s, stream_id, why.find("limit") != std::string::npos ? 8 : 13, why);
      return 0;
    }
    d = std::move(plain);
  }
  s->cancelled = std::make_shared<std::atomic<bool>>(false);
  s->head->cancelled = s->cancelled;
  s->head->stream_id = stream_id;
  s->handed_up = true;
  // The headers leave with the request (the server's limits on requests bound them now).
  held_bytes -= s->state_bytes - kStreamStateBytes;
  s->state_bytes = kStreamStateBytes;
  ChainBuffer frame = std::move(d);
  frame.SetMeta(std::move(s->head));
  sink_->push_back(std::move(frame));
  return 0;
}

int H2Session::OnStreamClose(int32_t stream_id, uint32_t error_code) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return 0;
  Stream* s = it->second.get();
  // The stream's windows are gone with it; the connection's is given back.
  Consume(nullptr, stream_id, s->unconsumed);
  held_bytes -= s->unconsumed + s->out.size() + s->state_bytes;
  if (role_ == Role::kServer) {
    // Closed before we answered: the client gave up (or reset it).
    if (!s->answered && s->cancelled != nullptr) {
      s->cancelled->store(true, std::memory_order_relaxed);
    }
  } else {
    if (error_code != NGHTTP2_NO_ERROR && !s->peer_reset && s->grpc_status < 0) {
      // We reset it (nghttp2 found the response broke HTTP/2's rules): not the server's doing.
      s->grpc_status = 13;  // INTERNAL
      s->grpc_message = std::string("the client reset the stream: ") +
                        nghttp2_http2_strerror(error_code) + " (the response broke HTTP/2)";
    }
    auto reply = std::make_unique<ClientReplyMeta>();
    reply->request_id = s->request_id;
    reply->http_status = s->http_status;
    reply->grpc_status = s->grpc_status;
    reply->rst_code = error_code;
    reply->grpc_message = std::move(s->grpc_message);
    reply->encoding = std::move(s->encoding);
    reply->metadata = std::move(s->metadata);
    ChainBuffer frame = std::move(s->data);
    frame.SetMeta(std::move(reply));
    stream_of_request_.erase(s->request_id);
    if (sink_ != nullptr) {
      sink_->push_back(std::move(frame));
    } else if (s->request_id != 0 && error_code != NGHTTP2_CANCEL) {
      // Closed while we were sending (our END_STREAM after the server had answered): handed
      // up with the next input. (A stream we reset was a call given up already.)
      late_.push_back(std::move(frame));
    }
  }
  Erase(stream_id);
  return 0;
}

void H2Session::OnFrameSent(uint8_t type, uint8_t flags, int32_t stream_id, uint32_t error_code) {
  if (type == NGHTTP2_DATA) flood_guard_.OnDataSent();
  if (type == NGHTTP2_GOAWAY) goaway_sent_ = true;
  if (type == NGHTTP2_RST_STREAM && role_ == Role::kServer) KeepResetStream(stream_id);
  if (type == NGHTTP2_HEADERS && (flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    Stream* s = Find(stream_id);
    // (Not when the request had ended: the stream is closed now.)
    if (s != nullptr && s->reset_after_answer &&
        nghttp2_session_get_stream_remote_close(session_, stream_id) == 0) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR);
    }
  }
  if (type == NGHTTP2_GOAWAY && error_code != NGHTTP2_NO_ERROR && fatal_.empty()) {
    fatal_ = std::string("sent GOAWAY: ") + nghttp2_http2_strerror(error_code);
  }
}

long H2Session::ReadData(int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags) {
  Stream* s = Find(stream_id);
  if (s == nullptr) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  size_t n = std::min(length, s->out.size());
  s->out.CopyTo(buf, n);
  s->out.Skip(n);
  held_bytes -= n;
  if (s->out.empty()) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    if (role_ == Role::kServer) {
      *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      std::vector<nghttp2_nv> nv;
      nv.reserve(s->trailers.size());
      for (const auto& [k, v] : s->trailers) nv.push_back(Nv(k, v));
      nghttp2_submit_trailer(session_, stream_id, nv.data(), nv.size());
    }
  }
  return static_cast<long>(n);
}

void H2Session::ExpireSlowRequests() {
  if (options_.request_timeout_ms == 0) return;
  // Checked as input arrives, at most every 100 ms: a peer that sends nothing is closed by the
  // connection's idle_time; one that trickles bytes (PINGs, a byte of DATA) to keep requests
  // open gets here.
  const int64_t now = MonotonicNanos();
  if (now < next_expiry_check_ns_) return;
  next_expiry_check_ns_ = now + 100 * kNanosPerMilli;
  const int64_t limit = static_cast<int64_t>(options_.request_timeout_ms) * kNanosPerMilli;
  for (auto& [id, st] : streams_) {
    if (!st->handed_up && !st->answered && st->opened_ns != 0 && now - st->opened_ns > limit) {
      AnswerError(st.get(), id, 4, "the request was not complete within request_timeout_ms");
    }
  }
}

void H2Session::AnswerError(Stream* s, int32_t stream_id, int grpc_status,
                            const std::string& message) {
  s->answered = true;
  std::string code = std::to_string(grpc_status);
  nghttp2_nv nv[] = {Nv(":status", "200"), Nv("content-type", "application/grpc"),
                     Nv("grpc-status", code), Nv("grpc-message", message)};
  nghttp2_submit_response(session_, stream_id, nv, 4, nullptr);
  // If the request is still coming, it is not wanted: once the answer is out (nghttp2 would
  // send a RST_STREAM submitted now before it), OnFrameSent resets the stream.
  s->reset_after_answer = true;
}

void H2Session::EncodeOutput(ChainBuffer&& message, ChainBuffer* out) {
  if (role_ == Role::kServer) {
    EncodeResponse(std::move(message), out);
  } else {
    EncodeRequest(std::move(message), out);
  }
  Drain(out);
}

void H2Session::EncodeResponse(ChainBuffer&& message, ChainBuffer* out) {
  (void)out;
  std::unique_ptr<MessageMeta> meta = message.TakeMeta();
  auto* reply = static_cast<ServerReplyMeta*>(meta.get());  // (the server codec's, or none)
  if (reply == nullptr) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "gRPC: a response without its call (a bug)");
    return;
  }
  const int32_t stream_id = reply->stream_id;
  Stream* s = Find(stream_id);
  if (s == nullptr || s->answered) return;  // the client reset the stream meanwhile
  s->answered = true;
  std::string code = std::to_string(reply->grpc_status);
  std::vector<nghttp2_nv> nv;
  nv.reserve(6 + reply->initial.size() + reply->trailing.size());
  nv.push_back(Nv(":status", "200"));
  nv.push_back(Nv("content-type", "application/grpc"));
  if (reply->grpc_status != 0 && message.empty()) {
    // Trailers-Only: one HEADERS frame that ends the stream.
    nv.push_back(Nv("grpc-status", code));
    if (!reply->grpc_message.empty()) nv.push_back(Nv("grpc-message", reply->grpc_message));
    for (const auto& [k, v] : reply->initial) nv.push_back(Nv(k, v));
    for (const auto& [k, v] : reply->trailing) nv.push_back(Nv(k, v));
    nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(), nullptr);
    return;
  }
  if (!reply->encoding.empty()) nv.push_back(Nv("grpc-encoding", reply->encoding));
  nv.push_back(Nv("grpc-accept-encoding", "identity,deflate,gzip"));
  for (const auto& [k, v] : reply->initial) nv.push_back(Nv(k, v));
  s->out = std::move(message);
  held_bytes += s->out.size();  // until it fits the peer's windows
  s->trailers.reserve(2 + reply->trailing.size());
  s->trailers.emplace_back("grpc-status", std::move(code));
  if (!reply->grpc_message.empty()) {
    s->trailers.emplace_back("grpc-message", std::move(reply->grpc_message));
  }
  for (auto& kv : reply->trailing) s->trailers.push_back(std::move(kv));
  nghttp2_data_provider prd{};
  prd.read_callback = ReadDataCb;
  nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(), &prd);
}

void H2Session::EncodeRequest(ChainBuffer&& message, ChainBuffer* out) {
  (void)out;
  std::unique_ptr<MessageMeta> meta = message.TakeMeta();
  const auto* call = static_cast<const ClientRequestMeta*>(meta.get());  // (the client codec's)
  if (call == nullptr) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "gRPC: a request without its call (a bug)");
    return;
  }
  const uint32_t request_id = call->request_id;
  const std::string& path = call->path;
  const std::string& authority = call->authority;
  const std::string& timeout = call->timeout;
  const std::string& encoding = call->encoding;
  const Pairs& metadata = call->metadata;
  std::vector<nghttp2_nv> nv;
  nv.reserve(10 + metadata.size());
  nv.push_back(Nv(":method", "POST"));
  nv.push_back(Nv(":scheme", "http"));
  nv.push_back(Nv(":path", path));
  if (!authority.empty()) nv.push_back(Nv(":authority", authority));  // (empty is invalid)
  nv.push_back(Nv("content-type", "application/grpc"));
  nv.push_back(Nv("te", "trailers"));
  if (!timeout.empty()) nv.push_back(Nv("grpc-timeout", timeout));
  if (!encoding.empty()) nv.push_back(Nv("grpc-encoding", encoding));
  nv.push_back(Nv("grpc-accept-encoding", "identity,deflate,gzip"));
  nv.push_back(Nv("user-agent", "trpc-cpp-grpc"));
  for (const auto& [k, v] : metadata) nv.push_back(Nv(k, v));
  auto st = std::make_unique<Stream>();
  st->request_id = request_id;
  st->out = std::move(message);
  held_bytes += st->out.size();
  nghttp2_data_provider prd{};
  prd.read_callback = ReadDataCb;
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
  stream_of_request_[request_id] = stream_id;
  streams_.emplace(stream_id, std::move(st));
}

void H2Session::CancelCall(uint32_t request_id, ChainBuffer* out) {
  auto it = stream_of_request_.find(request_id);
  if (it == stream_of_request_.end()) return;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, it->second, NGHTTP2_CANCEL);
  Drain(out);
}

void H2Session::OnShutdown(ChainBuffer* out) {
  if (role_ != Role::kServer) return;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  Drain(out);
}

}  // namespace trpc::grpc::detail
