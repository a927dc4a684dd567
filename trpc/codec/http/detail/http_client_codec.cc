#include "trpc/codec/http/detail/http_client_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>

#include "trpc/base/logging.h"
#include "trpc/base/status.h"
#include "trpc/codec/detail/message_body.h"
#include "trpc/codec/http/detail/error_body.h"
#include "trpc/codec/http/detail/http_syntax.h"

namespace trpc::http {

namespace {

using detail::ResponseParser;

// A client connection's response parser, and whether each request on the wire was HEAD (its
// response has no body), oldest first.
class HttpClientConnState final : public FrameCodecState {
 public:
  explicit HttpClientConnState(const detail::ResponseLimits& limits) : parser(limits) {
    // Frames only: DecodeResponse reads what it needs from the head that stays in the frame.
    parser.set_keep_fields(false);
  }

  void OnInputEnded() override { input_ended = true; }

  ResponseParser parser;
  std::deque<bool> head_requests;
  bool limits_set = false;
  bool input_ended = false;  // the server closed its side: a response without a length ends
};

// Error bodies longer than this are not read for codes (ours are a few dozen bytes).
constexpr size_t kMaxErrorBody = 64 * 1024;
// More than any head the split accepts (ResponseLimits::max_header_bytes).
constexpr size_t kMaxHeadCopy = 1u << 20;

bool ValidTarget(std::string_view s) { return detail::AllIn(s, detail::kTarget); }
bool ValidFieldName(std::string_view s) { return detail::AllIn(s, detail::kToken); }
bool ValidFieldValue(std::string_view s) {
  return detail::SkipFieldValue(s.data(), s.data() + s.size()) == s.data() + s.size();
}

bool CodecOwned(std::string_view name) {
  return detail::EqualsLower(name, "content-length") ||
         detail::EqualsLower(name, "transfer-encoding") || detail::EqualsLower(name, "connection");
}

void AppendLine(std::string* head, std::string_view name, std::string_view value) {
  head->append(name);
  head->append(": ");
  head->append(value);
  head->append("\r\n");
}

void AppendContentLength(std::string* head, size_t n) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), n);
  (void)ec;  // 24 digits hold any size_t
  AppendLine(head, "Content-Length", std::string_view(digits, end - digits));
}

// The size of the head at the front of a frame (up to and including its blank line), or 0.
// The split has checked the head, so its first CRLFCRLF ends it.
size_t HeadSize(const ChainBuffer& frame, std::string* scratch, std::string_view* head) {
  std::string_view first = frame.FirstSpan();
  size_t end = first.find("\r\n\r\n");
  if (end != std::string_view::npos) {
    *head = first.substr(0, end + 4);
    return end + 4;
  }
  // A head spread over blocks: rare. The split bounded it, so the first bytes hold it.
  scratch->resize(std::min<size_t>(frame.size(), kMaxHeadCopy));
  frame.CopyTo(scratch->data(), scratch->size());
  end = scratch->find("\r\n\r\n");
  if (end == std::string::npos) return 0;
  *head = std::string_view(*scratch).substr(0, end + 4);
  return end + 4;
}

// The status code of a head that starts "HTTP/1.x NNN"; 0 if it does not.
int StatusOf(std::string_view head) {
  if (head.size() < 12 || head.substr(0, 5) != "HTTP/") return 0;
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (head[i] < '0' || head[i] > '9') return 0;
    status = status * 10 + (head[i] - '0');
  }
  return status;
}

// Finds the first field `lower_name` of a head (after its status line): true with `*value`.
bool FindField(std::string_view head, std::string_view lower_name, std::string_view* value) {
  size_t line = head.find("\r\n");
  while (line != std::string_view::npos && line + 2 < head.size()) {
    const size_t start = line + 2;
    const size_t end = head.find("\r\n", start);
    if (end == std::string_view::npos || end == start) return false;
    std::string_view field = head.substr(start, end - start);
    const size_t colon = field.find(':');
    if (colon != std::string_view::npos &&
        detail::EqualsLower(field.substr(0, colon), lower_name)) {
      *value = detail::TrimOws(field.substr(colon + 1));
      return true;
    }
    line = end;
  }
  return false;
}

bool IsJson(std::string_view content_type) {
  std::string_view media = detail::TrimOws(content_type.substr(0, content_type.find(';')));
  return detail::EqualsLower(media, "application/json");
}

}  // namespace

int32_t RetCodeOfHttpStatus(int status) {
  if (status >= 200 && status < 300) return kSuccess;
  switch (status) {
    case 400:
    case 411:
    case 413:
    case 414:
    case 415:
    case 422:
    case 431:
      return kServerDecodeErr;
    case 401:
    case 403:
      return kServerAuthErr;
    case 404:
    case 405:
      return kServerNoFuncErr;
    case 408:
    case 504:
      return kServerTimeoutErr;
    case 429:
      return kServerLimitedErr;
    case 503:
      return kServerOverloadErr;
    default:
      return status >= 500 && status < 600 ? kServerSystemErr : kUnknownErr;
  }
}

std::unique_ptr<FrameCodecState> HttpClientCodec::NewConnectionState() {
  return std::make_unique<HttpClientConnState>(limits_);
}

void HttpClientCodec::OnRequestSent(FrameCodecState* state, const ChainBuffer& request) {
  auto* st = static_cast<HttpClientConnState*>(state);
  if (st == nullptr) return;
  char scratch[5];
  st->head_requests.push_back(request.size() >= 5 &&
                              std::memcmp(request.Peek(5, scratch), "HEAD ", 5) == 0);
}

SplitResult HttpClientCodec::Split(ChainBuffer* in, std::vector<ChainBuffer>* out,
                                   size_t max_frame_size, std::string* err) {
  (void)in;
  (void)out;
  (void)max_frame_size;
  *err = "the HTTP client codec needs its connection state";
  return SplitResult::kError;
}

SplitResult HttpClientCodec::SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out,
                                            size_t max_frame_size, std::string* err,
                                            FrameCodecState* state) {
  auto* st = static_cast<HttpClientConnState*>(state);
  if (st == nullptr) return Split(in, out, max_frame_size, err);
  ResponseParser& parser = st->parser;
  if (!st->limits_set) {
    st->limits_set = true;
    detail::ResponseLimits limits = limits_;
    limits.max_body_bytes = max_frame_size;
    limits.max_message_bytes = max_frame_size;
    parser.set_limits(limits);
  }
  while (!st->closing) {
    if (st->head_requests.empty()) {
      if (in->empty()) return SplitResult::kOk;
      *err = "the server sent bytes that answer no request";
      return SplitResult::kError;
    }
    parser.set_head_request(st->head_requests.front());
    const ResponseParser::Result r = parser.Parse(*in, st->input_ended);
    if (r == ResponseParser::Result::kNeedMore) return SplitResult::kOk;
    if (r == ResponseParser::Result::kError) {
      *err = "bad HTTP response: " + parser.error();
      return SplitResult::kError;
    }
    const detail::ResponseHead& h = parser.head();
    ChainBuffer wire = in->Cut(parser.wire_size());
    wire.Skip(parser.head_offset());  // interim responses
    if (h.chunked) {
      ChainBuffer frame = wire.Cut(parser.head_end() - parser.head_offset());
      frame.Append(std::move(parser.dechunked_body()));
      out->push_back(std::move(frame));
    } else {
      out->push_back(std::move(wire));
    }
    st->head_requests.pop_front();
    // The last response of this connection: the rest is not read.
    if (!h.keep_alive) {
      st->closing = true;
      in->Clear();
    }
    parser.Reset();
  }
  return SplitResult::kOk;
}

bool HttpClientCodec::EncodeRequest(RpcRequest* req, const google::protobuf::MessageLite* body_msg,
                                    ChainBuffer* out) {
  if (!req->attachment.empty()) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                      "http: cannot send a request to {}: HTTP/1.1 calls have no attachments",
                      req->func);
    return false;
  }
  if (req->content_encoding != 0) {
    // (Content-Encoding on requests is rare and not negotiated in HTTP/1.1: not sent.)
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                      "http: cannot compress a request to {}: HTTP/1.1 calls take no compress "
                      "type (asked for {})",
                      req->func, req->content_encoding);
    return false;
  }
  const auto* plain = dynamic_cast<const HttpClientRequest*>(req->protocol.get());
  const bool json = plain == nullptr && req->content_type == kContentTypeJson;
  ChainBuffer body;
  if (body_msg != nullptr) {
    std::string err;
    if (!SerializeMessageBody(*body_msg, json ? kContentTypeJson : kContentTypeProtobuf, &body,
                              &err)) {
      TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "http: cannot encode a request to {}: {}",
                        req->func, err);
      return false;
    }
  } else {
    body = std::move(req->body);
  }
  const std::string_view host = !req->authority.empty() ? req->authority
                                : !req->callee.empty()  ? std::string_view(req->callee)
                                                        : std::string_view("localhost");
  if (!ValidFieldValue(host)) return false;
  std::string head;
  head.reserve(160);
  if (plain == nullptr) {
    if (req->func.empty() || req->func[0] != '/' || !ValidTarget(req->func)) return false;
    head.append("POST ");
    head.append(req->func);
    head.append(" HTTP/1.1\r\n");
    AppendLine(&head, "Host", host);
    AppendLine(&head, "Content-Type", json ? "application/json" : "application/x-protobuf");
    AppendContentLength(&head, body.size());
  } else {
    if (!ValidTarget(plain->target)) return false;
    head.append(HttpMethodName(plain->method));
    head.push_back(' ');
    head.append(plain->target);
    head.append(" HTTP/1.1\r\n");
    bool own_host = false;
    for (const auto& [name, value] : plain->headers) {
      if (!ValidFieldName(name) || !ValidFieldValue(value)) return false;
      own_host = own_host || detail::EqualsLower(name, "host");
    }
    if (!own_host) AppendLine(&head, "Host", host);
    for (const auto& [name, value] : plain->headers) {
      if (!CodecOwned(name)) AppendLine(&head, name, value);
    }
    // A body, or a method whose request is expected to have one (RFC 9110 §8.6).
    const HttpMethod m = plain->method;
    if (!body.empty() || m == HttpMethod::kPost || m == HttpMethod::kPut ||
        m == HttpMethod::kPatch) {
      AppendContentLength(&head, body.size());
    }
  }
  head.append("\r\n");
  out->Append(head);
  out->Append(std::move(body));
  return true;
}

bool HttpClientCodec::DecodeResponse(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) {
  std::string scratch;
  std::string_view head;
  const size_t head_size = HeadSize(frame, &scratch, &head);
  const int status = StatusOf(head);
  if (head_size == 0 || status == 0) {
    *err = "not an HTTP response frame";
    return false;
  }
  frame.Skip(head_size);
  std::string_view content_type;
  const bool has_type = FindField(head, "content-type", &content_type);
  if (status >= 200 && status < 300) {
    rsp->content_type = has_type && IsJson(content_type) ? kContentTypeJson : kContentTypeProtobuf;
    rsp->body = std::move(frame);
    return true;
  }
  // A failure: the server's codes when its JSON error body carries them, else the status's.
  detail::ErrorBody e;
  if (frame.size() <= kMaxErrorBody && detail::ParseErrorBody(frame.ToString(), &e) && e.has_code &&
      (e.code != 0 || e.func_code != 0)) {
    rsp->ret = e.code;
    rsp->func_ret = e.func_code;
    rsp->error_msg = std::move(e.message);
    return true;
  }
  rsp->ret = RetCodeOfHttpStatus(status);
  const size_t reason_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, reason_end);
  rsp->error_msg = !e.message.empty() ? fmt::format("{}: {}", status_line.substr(9), e.message)
                                      : std::string(status_line.substr(9));
  return true;
}

namespace {
const bool kRegistered = [] {
  CodecRegistry::Instance().RegisterClient("http", std::make_shared<HttpClientCodec>());
  return true;
}();
}  // namespace

}  // namespace trpc::http
