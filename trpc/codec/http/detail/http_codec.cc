#include "trpc/codec/http/detail/http_codec.h"

#include <fmt/format.h>
#include <strings.h>
#include <time.h>

#include <charconv>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/base/status.h"
#include "trpc/codec/detail/message_body.h"
#include "trpc/codec/detail/protocol_options.h"
#include "trpc/codec/http/detail/request_parser.h"
#include "trpc/codec/http/http_message.h"

namespace trpc::http {

namespace {

using namespace std::string_view_literals;

using detail::RequestParser;

// A connection's parser and the heads of the requests cut but not yet decoded (FIFO: frames are
// decoded in the order they were cut).
class HttpConnState final : public FrameCodecState {
 public:
  HttpConnState(const detail::ParserLimits& limits, int64_t header_timeout_ms)
      : parser(limits), header_timeout_ns(header_timeout_ms * kNanosPerMilli) {}

  void OnReadTimeout() override;
  int64_t ReadDeadline() const override { return read_deadline_ns; }

  RequestParser parser;
  // Heads cut but not yet decoded, oldest at heads[heads_front]. A vector with a read index
  // rather than a std::deque: a deque allocates ~600 bytes up front, per connection, even
  // while it is empty (a quarter of an idle keep-alive connection's memory).
  std::vector<std::unique_ptr<HttpRequest>> heads;
  size_t heads_front = 0;
  int64_t header_timeout_ns;
  // MonotonicNanos() by which the request head being read must be complete; 0 = none.
  int64_t read_deadline_ns = 0;
  bool continue_sent = false;
  bool max_message_set = false;  // the parser has the service's max_packet_size
};

// "Date: Mon, 23 Nov 2026 14:00:00 GMT\r\n", formatted once a second per thread.
std::string_view DateLine() {
  thread_local time_t cached_sec = 0;
  thread_local char line[64];
  thread_local size_t len = 0;
  time_t now = time(nullptr);
  if (now != cached_sec) {
    cached_sec = now;
    tm t;
    gmtime_r(&now, &t);
    len = strftime(line, sizeof(line), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &t);
  }
  return {line, len};
}

void AppendJsonString(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", u);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

bool SafeHeaderText(std::string_view s) {
  // No early exit: a branch-free loop the compiler vectorizes (this runs on every reply's
  // Content-Type and header fields).
  bool bad = false;
  for (char c : s) bad |= (c == '\r') | (c == '\n') | (c == '\0');
  return !bad;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Skipped in a handler's header list: the codec owns the message framing.
bool FramingHeader(std::string_view name) {
  return IEquals(name, "content-length") || IEquals(name, "transfer-encoding") ||
         IEquals(name, "connection");
}

struct ReplyHead {
  int status = 200;
  std::string_view content_type;
  const HttpHeaders* headers = nullptr;
  bool keep_alive = true;
  int version_minor = 1;
  bool head_request = false;
};

// Appends to a caller-sized char array (ReplySize() bounds what is written).
struct HeadWriter {
  char* p;
  void Put(std::string_view s) {
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  void PutNumber(uint64_t v) { p = std::to_chars(p, p + 20, v).ptr; }
};

bool Bodiless(int status) { return status < 200 || status == 204 || status == 304; }

std::string_view ContentTypeOrDefault(const ReplyHead& h, std::string_view body) {
  if (!h.content_type.empty()) return h.content_type;
  return body.empty() ? std::string_view() : "text/plain"sv;
}

// An upper bound on what WriteReply writes: 128 covers the fixed text (status line, header
// names, "Connection: keep-alive", CRLFs: 112 bytes with numbers counted at 20 digits).
size_t ReplySize(const ReplyHead& h, std::string_view body, bool send_body) {
  size_t n = 128 + StatusReason(h.status).size() + DateLine().size() +
             ContentTypeOrDefault(h, body).size() + (send_body ? body.size() : 0);
  if (h.headers != nullptr) {
    for (const auto& [k, v] : *h.headers) n += k.size() + v.size() + 4;
  }
  return n;
}

// Writes status line, headers and `body` (unless HEAD or a bodiless status) to `out`, with one
// copy into `out`: the reply is laid out in a stack buffer (a heap one for very large replies)
// by plain memcpy, since this runs once per reply and string appends with their capacity checks
// were a visible share of a pipelined hello-world reply (docs/benchmark.md).
void WriteReply(const ReplyHead& h, std::string_view body, ChainBuffer* out) {
  constexpr size_t kStack = 1024;
  const bool bodiless = Bodiless(h.status);
  const bool send_body = !bodiless && !h.head_request;
  const size_t bound = ReplySize(h, body, send_body);
  char stack[kStack];
  std::unique_ptr<char[]> heap;
  char* buf = stack;
  if (bound > kStack) {
    heap.reset(new char[bound]);
    buf = heap.get();
  }
  HeadWriter w{buf};
  w.Put("HTTP/1.1 "sv);
  w.PutNumber(static_cast<uint64_t>(h.status));
  w.Put(" "sv);
  w.Put(StatusReason(h.status));
  w.Put("\r\n"sv);
  w.Put(DateLine());
  if (!bodiless) {
    std::string_view type = ContentTypeOrDefault(h, body);
    if (!type.empty()) {
      w.Put("Content-Type: "sv);
      w.Put(type);
      w.Put("\r\n"sv);
    }
    w.Put("Content-Length: "sv);
    w.PutNumber(body.size());
    w.Put("\r\n"sv);
  }
  if (h.headers != nullptr) {
    for (const auto& [k, v] : *h.headers) {
      if (FramingHeader(k)) continue;
      w.Put(k);
      w.Put(": "sv);
      w.Put(v);
      w.Put("\r\n"sv);
    }
  }
  if (!h.keep_alive) {
    w.Put("Connection: close\r\n"sv);
  } else if (h.version_minor == 0) {
    w.Put("Connection: keep-alive\r\n"sv);
  }
  w.Put("\r\n"sv);
  if (send_body) w.Put(body);
  out->Append(buf, static_cast<size_t>(w.p - buf));
}

// The JSON error body every non-handler answer carries.
std::string ErrorBody(int32_t code, int32_t func_code, std::string_view message) {
  fmt::memory_buffer b;
  fmt::format_to(std::back_inserter(b), "{{\"code\":{},\"func_code\":{},\"message\":", code,
                 func_code);
  AppendJsonString(b, message);
  b.push_back('}');
  return std::string(b.data(), b.size());
}

// The answer to a request we refuse before any handler sees it; the connection then closes.
void WriteRefusal(int status, std::string_view why, ChainBuffer* out) {
  ReplyHead h;
  h.status = status;
  h.content_type = "application/json";
  h.keep_alive = false;
  WriteReply(h, ErrorBody(0, 0, why), out);
}

void HttpConnState::OnReadTimeout() {
  WriteRefusal(408, "the request head was not complete in time", &immediate);
}

HttpMethod ToMethod(detail::Method m) { return m; }  // the same enum

uint32_t ContentTypeOf(const std::string* ct) {
  if (ct == nullptr) return kContentTypeNoop;
  std::string_view v = *ct;
  v = v.substr(0, v.find(';'));
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  auto is = [&](std::string_view want) { return IEquals(v, want); };
  if (is("application/json")) return kContentTypeJson;
  if (is("application/x-protobuf") || is("application/protobuf") ||
      is("application/octet-stream")) {
    return kContentTypeProtobuf;
  }
  return kContentTypeNoop;
}

}  // namespace

int HttpStatusOf(int32_t ret, int32_t func_ret) {
  switch (ret) {
    case kSuccess:
      return func_ret == 0 ? 200 : 500;
    case kServerDecodeErr:
      return 400;
    case kServerNoServiceErr:
    case kServerNoFuncErr:
      return 404;
    case kServerTimeoutErr:
    case kServerFullLinkTimeoutErr:
    case kClientInvokeTimeoutErr:
    case kClientFullLinkTimeoutErr:
      return 504;
    case kServerOverloadErr:
      return 503;
    case kServerLimitedErr:
      return 429;
    case kServerAuthErr:
      return 401;
    case kServerValidateErr:
      return 400;
    case kClientConnectErr:
    case kClientNetworkErr:
    case kClientReadFrameErr:
    case kClientDecodeErr:
      return 502;
    default:
      return 500;
  }
}

std::shared_ptr<ServerCodec> HttpServerCodec::WithOptions(
    const std::map<std::string, std::string>& options, std::string* key, std::string* err) {
  HttpServerOptions o = options_;
  const std::vector<IntegerOption> integers = {
      {"max_request_line", 64, 1u << 20, [&](uint64_t v) { o.max_request_line = v; }},
      {"max_header_bytes", 256, 16u << 20, [&](uint64_t v) { o.max_header_bytes = v; }},
      {"max_header_count", 1, 10000, [&](uint64_t v) { o.max_header_count = v; }},
      {"max_body_bytes", 0, 1ull << 40, [&](uint64_t v) { o.max_body_bytes = v; }},
      {"header_timeout_ms", 0, 3'600'000,
       [&](uint64_t v) { o.header_timeout_ms = static_cast<int64_t>(v); }},
  };
  auto json_emit_defaults = [&](const std::string& name, const std::string& value, std::string* e) {
    if (name != "json_emit_defaults") return false;
    if (value != "true" && value != "false") {
      *e = fmt::format("expected true or false, got '{}'", value);
      return false;
    }
    o.json_emit_defaults = value == "true";
    return true;
  };
  if (!ApplyProtocolOptions("http", options, integers, {"json_emit_defaults"}, json_emit_defaults,
                            key, err)) {
    return nullptr;
  }
  return std::make_shared<HttpServerCodec>(o);
}

std::unique_ptr<FrameCodecState> HttpServerCodec::NewConnectionState() {
  detail::ParserLimits limits;
  limits.max_request_line = options_.max_request_line;
  limits.max_header_bytes = options_.max_header_bytes;
  limits.max_header_count = options_.max_header_count;
  limits.max_body_bytes = options_.max_body_bytes;
  return std::make_unique<HttpConnState>(limits, options_.header_timeout_ms);
}

SplitResult HttpServerCodec::Split(ChainBuffer* in, std::vector<ChainBuffer>* out,
                                   size_t max_frame_size, std::string* err) {
  (void)in;
  (void)out;
  (void)max_frame_size;
  *err = "the HTTP codec needs its connection state";
  return SplitResult::kError;
}

SplitResult HttpServerCodec::SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out,
                                            size_t max_frame_size, std::string* err,
                                            FrameCodecState* state) {
  auto* st = static_cast<HttpConnState*>(state);
  if (st == nullptr) return Split(in, out, max_frame_size, err);
  RequestParser& parser = st->parser;
  if (!st->max_message_set) {  // (before the first request: the parser has seen no byte yet)
    st->max_message_set = true;
    detail::ParserLimits limits = parser.limits();
    limits.max_message_bytes = max_frame_size;
    parser.set_limits(limits);
  }
  while (!in->empty() && !st->closing) {
    RequestParser::Result r = parser.Parse(*in);
    if (r == RequestParser::Result::kError) {
      *err = fmt::format("bad HTTP request ({}): {}", parser.error_status(), parser.error());
      WriteRefusal(parser.error_status(), parser.error(), &st->immediate);
      return SplitResult::kError;
    }
    if (r == RequestParser::Result::kNeedMore) {
      if (!parser.head_complete()) {
        if (st->read_deadline_ns == 0 && st->header_timeout_ns > 0) {
          st->read_deadline_ns = MonotonicNanos() + st->header_timeout_ns;
        }
      } else {
        st->read_deadline_ns = 0;  // the head is in; the body may take its time
        if (parser.head().expect_continue && !st->continue_sent) {
          st->continue_sent = true;
          st->immediate.Append(std::string_view("HTTP/1.1 100 Continue\r\n\r\n"));
        }
      }
      return SplitResult::kOk;
    }
    detail::RequestHead& h = parser.head();
    auto req = std::make_unique<HttpRequest>();
    req->set_method(ToMethod(h.method));
    // Moves, not swaps: the request's strings are new and empty, and moving a short (SSO)
    // string is a plain copy while swap shuffles both buffers.
    req->mutable_target() = std::move(h.target);
    req->mutable_path() = std::move(h.path);
    req->mutable_query() = std::move(h.query);
    req->set_version_minor(h.version_minor);
    req->set_keep_alive(h.keep_alive);
    req->mutable_headers().swap(h.headers);
    ChainBuffer wire = in->Cut(parser.wire_size());
    if (h.chunked) {
      out->push_back(std::move(parser.dechunked_body()));
      parser.dechunked_body().Clear();
    } else {
      wire.Skip(parser.head_size());
      out->push_back(std::move(wire));
    }
    // The peer's last request: answer it and close; whatever follows it is ignored.
    if (!h.keep_alive) st->closing = true;
    st->heads.push_back(std::move(req));
    parser.Reset();
    st->continue_sent = false;
    st->read_deadline_ns = 0;
  }
  if (!in->empty() && st->closing) in->Clear();
  return SplitResult::kOk;
}

bool HttpServerCodec::DecodeRequest(ChainBuffer&& frame, RpcRequest* req, std::string* err) {
  (void)frame;
  (void)req;
  *err = "the HTTP codec needs its connection state";
  return false;
}

bool HttpServerCodec::DecodeRequestWithState(ChainBuffer&& frame, FrameCodecState* state,
                                             RpcRequest* req, std::string* err) {
  auto* st = static_cast<HttpConnState*>(state);
  if (st == nullptr || st->heads_front == st->heads.size()) {
    *err = "an HTTP frame without its parsed head";
    return false;
  }
  std::unique_ptr<HttpRequest> http = std::move(st->heads[st->heads_front++]);
  if (st->heads_front == st->heads.size()) {  // drained: reuse the storage from the start
    st->heads.clear();
    st->heads_front = 0;
  }
  req->call_type = kUnaryCall;
  req->func = http->path();
  req->content_type = ContentTypeOf(http->Header("content-type"));
  req->body = std::move(frame);
  http->set_body_buffer(&req->body);
  req->protocol = std::move(http);
  return true;
}

bool HttpServerCodec::EncodeResponse(RpcResponse* rsp,
                                     const google::protobuf::MessageLite* body_msg,
                                     ChainBuffer* out) {
  const auto* req = static_cast<const HttpRequest*>(rsp->request_protocol);
  ReplyHead h;
  if (req != nullptr) {
    h.keep_alive = req->keep_alive();
    h.version_minor = req->version_minor();
    h.head_request = req->method() == HttpMethod::kHead;
  }
  if (rsp->protocol_reply() != nullptr && rsp->ret == 0) {
    const auto* hr = static_cast<const HttpResponse*>(rsp->protocol_reply());
    for (const auto& [k, v] : hr->headers()) {
      if (!SafeHeaderText(k) || !SafeHeaderText(v) || k.empty()) return false;
    }
    if (!SafeHeaderText(hr->content_type()) || hr->status() < 100 || hr->status() > 999) {
      return false;
    }
    h.status = hr->status();
    h.content_type = hr->content_type();
    h.headers = &hr->headers();
    WriteReply(h, hr->body(), out);
    return true;
  }
  if (rsp->ret != 0 || rsp->func_ret != 0) {
    h.status = HttpStatusOf(rsp->ret, rsp->func_ret);
    if (req != nullptr) {
      // The router's own 405/415 (http_message.h), unless a filter changed the status since.
      const HttpRequest::ErrorAnswer& a = req->error_answer();
      if (a.status != 0 && a.ret == rsp->ret && rsp->func_ret == 0) {
        h.status = a.status;
        if (!a.headers.empty()) h.headers = &a.headers;
      }
    }
    h.content_type = "application/json";
    WriteReply(h, ErrorBody(rsp->ret, rsp->func_ret, rsp->error_msg), out);
    return true;
  }
  ChainBuffer body;
  if (body_msg != nullptr) {
    std::string err;
    uint32_t ct = rsp->content_type == kContentTypeJson ? kContentTypeJson : kContentTypeProtobuf;
    if (!SerializeMessageBody(*body_msg, ct, &body, &err, {options_.json_emit_defaults})) {
      return false;
    }
  } else {
    body = std::move(rsp->body);
  }
  h.content_type =
      rsp->content_type == kContentTypeJson ? "application/json" : "application/x-protobuf";
  WriteReply(h, body.ToString(), out);
  return true;
}

namespace {
const bool kRegistered = [] {
  CodecRegistry::Instance().RegisterServer(std::string(kHttpCodecName),
                                           std::make_shared<HttpServerCodec>());
  return true;
}();
}  // namespace

}  // namespace trpc::http
