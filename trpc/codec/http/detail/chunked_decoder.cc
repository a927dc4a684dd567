#include "trpc/codec/http/detail/chunked_decoder.h"

#include <algorithm>
#include <string_view>

#include "trpc/codec/http/detail/http_syntax.h"

namespace trpc::http::detail {

static_assert(kMaxChunkExtensionBytes == 16384, "the error message below names the bound");

void ChunkedDecoder::Reset() {
  state_ = State::kChunkSize;
  chunk_left_ = 0;
  chunk_digits_ = 0;
  chunk_line_ = 0;
  extension_bytes_ = 0;
  body_total_ = 0;
  trailer_bytes_ = 0;
  trailer_line_.clear();
  error_status_ = 0;
  error_ = "";
}

ChunkedDecoder::Result ChunkedDecoder::Fail(int status, const char* why) {
  state_ = State::kError;
  error_status_ = status;
  error_ = why;
  return Result::kError;
}

ChunkedDecoder::Result ChunkedDecoder::Decode(const char* p, size_t n, size_t* used,
                                              ChainBuffer* body) {
  const char* const begin = p;
  const char* const end = p + n;
  *used = 0;
  if (state_ == State::kComplete) return Result::kComplete;
  if (state_ == State::kError) return Result::kError;
  while (p < end) {
    if (state_ == State::kChunkData) {
      const size_t take =
          static_cast<size_t>(std::min<uint64_t>(chunk_left_, static_cast<uint64_t>(end - p)));
      body->Append(p, take);
      p += take;
      chunk_left_ -= take;
      if (chunk_left_ == 0) state_ = State::kChunkDataCR;
      continue;
    }
    const char c = *p++;
    *used = static_cast<size_t>(p - begin);  // the bad byte counts on an error
    switch (state_) {
      case State::kChunkSize:
      case State::kChunkExt:
      case State::kChunkSizeLF:
        if (++chunk_line_ > limits_.max_chunk_line) return Fail(400, "chunk-size line too long");
        break;
      default:
        break;
    }
    switch (state_) {
      case State::kChunkSize: {
        const int d = HexValue(c);
        if (d >= 0) {
          if (chunk_digits_ == 16) return Fail(400, "chunk size has more than 16 hex digits");
          ++chunk_digits_;
          chunk_left_ = chunk_left_ << 4 | static_cast<uint64_t>(d);
          if (chunk_left_ > limits_.max_body_bytes - body_total_) {
            return Fail(413, "chunked body exceeds the body limit");
          }
        } else if (chunk_digits_ == 0) {
          return Fail(400, "chunk size is not a hex number");
        } else if (c == ';') {
          state_ = State::kChunkExt;
        } else if (c == '\r') {
          state_ = State::kChunkSizeLF;
        } else {
          return Fail(400, c == '\n' ? kBareLf : "invalid character after chunk size");
        }
        break;
      }
      case State::kChunkExt:
        if (c == '\r') {
          state_ = State::kChunkSizeLF;
        } else if (c == '\n') {
          return Fail(400, kBareLf);
        } else if (!Is(c, kFieldValue)) {
          return Fail(400, "control character in chunk extension");
        } else if (++extension_bytes_ > kMaxChunkExtensionBytes) {
          return Fail(413, "chunk extensions exceed 16384 bytes");
        }
        break;
      case State::kChunkSizeLF:
        if (c != '\n') return Fail(400, kBareCr);
        chunk_line_ = 0;
        chunk_digits_ = 0;
        if (chunk_left_ == 0) {
          state_ = State::kTrailerLine;
        } else {
          body_total_ += chunk_left_;
          state_ = State::kChunkData;
        }
        break;
      case State::kChunkDataCR:
        if (c != '\r') return Fail(400, "missing CRLF after chunk data");
        state_ = State::kChunkDataLF;
        break;
      case State::kChunkDataLF:
        if (c != '\n') return Fail(400, "missing CRLF after chunk data");
        state_ = State::kChunkSize;
        break;
      case State::kTrailerLine:
        if (++trailer_bytes_ > limits_.max_trailer_bytes) {
          return Fail(431, "trailer section too large");
        }
        trailer_line_.push_back(c);
        if (c == '\n') {
          if (Result r = EndTrailerLine(); r != Result::kNeedMore) return r;
        }
        break;
      default:  // not reached: the other states do not run here
        return Fail(400, "internal parser state");
    }
  }
  *used = n;
  return Result::kNeedMore;
}

ChunkedDecoder::Result ChunkedDecoder::DecodeFrom(const ChainBuffer& in, size_t end,
                                                  SpanCursor* cursor, size_t* pos,
                                                  ChainBuffer* body) {
  Result r = state_ == State::kComplete ? Result::kComplete
             : state_ == State::kError  ? Result::kError
                                        : Result::kNeedMore;
  while (r == Result::kNeedMore && *pos < end) {
    const std::string_view span = cursor->At(in, *pos);
    const size_t offset = *pos - cursor->begin();
    size_t used = 0;
    r = Decode(span.data() + offset, std::min(span.size() - offset, end - *pos), &used, body);
    *pos += used;
  }
  return r;
}

// Trailer fields are checked like header fields and dropped (RFC 9110 §6.5.1).
ChunkedDecoder::Result ChunkedDecoder::EndTrailerLine() {
  const size_t n = trailer_line_.size();
  if (n < 2 || trailer_line_[n - 2] != '\r') return Fail(400, kBareLf);
  if (n == 2) {
    state_ = State::kComplete;
    return Result::kComplete;
  }
  const char* p = trailer_line_.data();
  std::string_view name, value;
  if (const char* why = ReadFieldLine(&p, p + n, &name, &value)) return Fail(400, why);
  trailer_line_.clear();
  return Result::kNeedMore;
}

}  // namespace trpc::http::detail
