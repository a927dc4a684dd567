#include "trpc/codec/grpc/detail/h2_session.h"

#include <algorithm>

#include "trpc/codec/detail/stream_session.h"
#include "trpc/codec/grpc/detail/grpc_wire.h"

namespace trpc::grpc::detail {

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
  return Self(ud)->OnHeader(frame->hd.stream_id, {reinterpret_cast<const char*>(name), namelen},
                            {reinterpret_cast<const char*>(value), valuelen});
}

int OnDataChunkCb(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                  void* ud) {
  return Self(ud)->OnDataChunk(stream_id, data, len);
}

int OnFrameRecvCb(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
  return Self(ud)->OnFrameRecv(frame->hd.type, frame->hd.flags, frame->hd.stream_id);
}

int OnStreamCloseCb(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* ud) {
  return Self(ud)->OnStreamClose(stream_id, error_code);
}

int OnFrameSendCb(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
  Self(ud)->OnFrameSent(frame->hd.type, frame->hd.flags, frame->hd.stream_id,
                        frame->hd.type == NGHTTP2_GOAWAY ? frame->goaway.error_code : 0);
  return 0;
}

}  // namespace

H2Session::H2Session(bool server, const H2Options& options)
    : options_(options), flood_guard_(options.floods, server) {
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
  // Our own bound on the header list (CountHeader) replaces nghttp2's default of 64 KiB.
  nghttp2_option_set_max_send_header_block_length(opt, 1u << 20);
  if (server) {
    nghttp2_option_set_stream_reset_rate_limit(opt, options_.max_rst_stream_burst,
                                               options_.max_rst_stream_per_second);
    nghttp2_session_server_new2(&session_, cbs, this, opt);
  } else {
    nghttp2_session_client_new2(&session_, cbs, this, opt);
  }
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (server) {
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
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, server ? 4 : 5);
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                        static_cast<int32_t>(options_.connection_window_size));
}

H2Session::~H2Session() { nghttp2_session_del(session_); }

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
  BeforeFeed();
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
  if (fatal_.empty()) AfterFeed();
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

bool H2Session::CountHeader(H2Stream* s, std::string_view name, std::string_view value, int* rv) {
  s->header_bytes += name.size() + value.size() + 32;
  if (s->header_bytes <= options_.max_header_list_size) return true;
  // Resets this stream; nghttp2 decodes the rest of the block (HPACK state) without us.
  if (++header_strikes_ >= kMaxHeaderStrikes) {
    Terminate(NGHTTP2_ENHANCE_YOUR_CALM, "header lists over max_header_list_size");
    *rv = NGHTTP2_ERR_CALLBACK_FAILURE;
  } else {
    *rv = NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  return false;
}

void H2Session::Consume(bool stream, int32_t stream_id, size_t n) {
  if (n == 0) return;
  if (stream) {
    nghttp2_session_consume(session_, stream_id, n);
  } else {
    nghttp2_session_consume_connection(session_, n);
  }
}

std::string H2Session::TooLargeMessage() const {
  return "message larger than max_message_size (" + std::to_string(options_.max_message_size) +
         " bytes)";
}

int H2Session::OnFrameRecv(uint8_t type, uint8_t flags, int32_t stream_id) {
  switch (type) {
    case NGHTTP2_GOAWAY:
      no_new_calls = true;  // the peer takes no new streams on this connection
      return 0;
    case NGHTTP2_RST_STREAM:
      if (H2Stream* s = FindSending(stream_id)) s->peer_reset = true;
      return 0;
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      OnStreamFrame(type, flags, stream_id);
      return 0;
    case NGHTTP2_WINDOW_UPDATE:
      OnWindowOpened(stream_id);
      return 0;
    case NGHTTP2_SETTINGS:
      if ((flags & NGHTTP2_FLAG_ACK) == 0) OnWindowOpened(0);
      return 0;
    default:
      return 0;
  }
}

void H2Session::OnFrameSent(uint8_t type, uint8_t flags, int32_t stream_id, uint32_t error_code) {
  (void)flags;
  (void)stream_id;
  if (type == NGHTTP2_DATA) flood_guard_.OnDataSent();
  if (type == NGHTTP2_HEADERS) flood_guard_.Earn(1);  // (a stream's opening window)
  if (type == NGHTTP2_GOAWAY && error_code != NGHTTP2_NO_ERROR && fatal_.empty()) {
    fatal_ = std::string("sent GOAWAY: ") + nghttp2_http2_strerror(error_code);
  }
}

long H2Session::ReadData(int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags) {
  H2Stream* s = FindSending(stream_id);
  if (s == nullptr) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  if (s->out.empty() && s->more_data) {
    s->deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  size_t n = std::min(length, s->out.size());
  s->out.CopyTo(buf, n);
  s->out.Skip(n);
  held_bytes -= n;
  if (s->out.empty() && !s->more_data) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    OnDataEnd(stream_id, s, data_flags);
  }
  return static_cast<long>(n);
}

MessageCut H2Session::NextMessage(H2Stream* s, int32_t stream_id, const std::string& encoding,
                                  ChainBuffer* msg, bool* compressed, int* code, std::string* why) {
  *compressed = false;
  if (s->data.size() < 5) return MessageCut::kNeedMore;
  uint8_t prefix[5];
  s->data.CopyTo(prefix, 5);
  const uint32_t len = (uint32_t{prefix[1]} << 24) | (uint32_t{prefix[2]} << 16) |
                       (uint32_t{prefix[3]} << 8) | prefix[4];
  if (len > options_.max_message_size) {
    *code = 8;  // RESOURCE_EXHAUSTED
    *why = TooLargeMessage();
    return MessageCut::kBad;
  }
  if (s->data.size() - 5 < len) return MessageCut::kNeedMore;
  s->data.Skip(5);
  *msg = s->data.Cut(len);
  if ((prefix[0] & 1) != 0) {
    if (encoding.empty() || encoding == "identity") {
      *code = 13;
      *why = "compressed message without a grpc-encoding";
      return MessageCut::kBad;
    }
    if (!IsSupportedEncoding(encoding)) {
      *code = 12;
      *why = "grpc-encoding '" + encoding + "' is not supported";
      return MessageCut::kBad;
    }
    ChainBuffer plain;
    if (!Decompress(encoding, *msg, options_.max_message_size, &plain, why)) {
      *code = why->find("limit") != std::string::npos ? 8 : 13;
      return MessageCut::kBad;
    }
    *msg = std::move(plain);
    *compressed = true;
  }
  // The prefix (and an empty message whole) go back to the windows now, the rest once the
  // reader has read the message: it reports nothing for an empty one.
  if (msg->empty()) {
    GiveBack(s, stream_id, 5 + len);
  } else {
    GiveBack(s, stream_id, 5);
    s->credit.emplace_back(msg->size(), len);
  }
  return MessageCut::kMessage;
}

void H2Session::GiveBack(H2Stream* s, int32_t stream_id, size_t n) {
  n = std::min(n, s->unconsumed);
  Consume(true, stream_id, n);
  s->unconsumed -= n;
  held_bytes -= n;
}

void H2Session::ConsumedOn(H2Stream* s, int32_t stream_id, size_t n, ChainBuffer* out) {
  s->consumed_carry += n;
  size_t wire = 0;
  while (!s->credit.empty() && s->consumed_carry >= s->credit.front().first) {
    s->consumed_carry -= s->credit.front().first;
    wire += s->credit.front().second;
    s->credit.pop_front();
  }
  if (wire == 0) return;
  GiveBack(s, stream_id, wire);
  Drain(out);
}

bool H2Session::CanSendOn(H2Stream* s, int32_t stream_id) {
  const int32_t window = nghttp2_session_get_stream_remote_window_size(session_, stream_id);
  if (window > 0 && s->out.size() < static_cast<size_t>(window)) return true;
  s->want_writable = true;
  return false;
}

bool H2Session::QueueMessage(H2Stream* s, ChainBuffer&& msg) {
  char flag = 0;
  // (The message's own options are looked at only on a stream that compresses.)
  const auto plain = [&msg] {
    const auto* opts = dynamic_cast<const StreamMessageOptions*>(msg.meta());
    return opts != nullptr && opts->no_compression;
  };
  if (!s->out_encoding.empty() && !plain()) {
    ChainBuffer packed;
    if (!Compress(s->out_encoding, msg, &packed)) return false;
    msg = std::move(packed);
    flag = 1;
  }
  const auto n = static_cast<uint32_t>(msg.size());
  const char prefix[5] = {flag, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  s->out.Append(prefix, 5);
  s->out.Append(std::move(msg));
  held_bytes += 5 + n;   // until it fits the peer's windows
  flood_guard_.Earn(3);  // (the peer may answer each message it reads with three)
  return true;
}

void H2Session::ResumeData(int32_t stream_id, H2Stream* s) {
  if (!s->deferred) return;
  s->deferred = false;
  nghttp2_session_resume_data(session_, stream_id);
}

ssize_t ReadDataCallback(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                         uint32_t* data_flags, nghttp2_data_source*, void* ud) {
  return Self(ud)->ReadData(stream_id, buf, length, data_flags);
}

}  // namespace trpc::grpc::detail
