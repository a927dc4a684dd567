#include "trpc/codec/http/detail/head_scanner.h"

#include <algorithm>

#include "trpc/codec/http/detail/http_syntax.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace trpc::http::detail {

// Where the LF of the line starting at `line_start` must come before, or a bound is exceeded.
inline size_t HeadScanner::LineLimit(const HeadLimits& limits, size_t line_start, size_t head_start,
                                     bool first_line) {
  // (The bound on the first line is at least 2, so an empty line always fits.)
  const size_t bound = first_line
                           ? SaturatingAdd(line_start, std::max<size_t>(limits.max_first_line, 2))
                           : SaturatingAdd(head_start, limits.max_header_bytes);
  return std::min(bound, limits.max_message_bytes);
}

// Looks for LF, then the byte before it must be CR. A bare CR inside a line is left to the head
// parse, which rejects it wherever it stands.
//
// The bytes are searched 16 at a time for all their LFs at once (a mask), so a chunk holding
// several short lines costs one search. A line's LF must come before its bound (LineLimit); the
// bound only moves while the first line is read (after it, it is the head's), and then the
// search restarts from the new line with the new bound. The state lives in locals while the
// loop runs: stores to members would make the compiler reload the limits after each.
HeadScanner::Result HeadScanner::Scan(const ChainBuffer& in, const HeadLimits& limits) {
  const size_t size = in.size();
  if (pos_ >= size) return Result::kNeedMore;
  const HeadLimits lim = limits;
  const size_t from = pos_;
  size_t pos = pos_;
  size_t line_start = line_start_;
  size_t head_start = head_start_;
  size_t first_line_end = first_line_end_;
  size_t field_lines = field_lines_;
  bool cr_last = cr_last_;
  Result result = Result::kNeedMore;
  size_t limit = LineLimit(lim, line_start, head_start, first_line_end == 0);
  for (;;) {
    // Every position reached is checked against the bound, the last one too.
    if (pos >= limit) {
      result = Fail(pos >= lim.max_message_bytes ? Error::kOverMessage
                    : first_line_end == 0        ? Error::kFirstLineTooLong
                                                 : Error::kHeadTooLarge);
      break;
    }
    if (pos >= size) break;
    const std::string_view span = cursor_.At(in, pos);
    const size_t base = cursor_.begin();
    const char* const first = span.data();
    const char* end = first + (std::min(base + span.size(), limit) - base);
    const char* p = first + (pos - base);
    while (p < end) {
      // The LFs of the next min(16, end - p) bytes, bit i for p[i].
      size_t n = end - p;
      unsigned lfs = 0;
#if defined(__SSE2__)
      const __m128i lf = _mm_set1_epi8('\n');
      if (n >= 16) {
        n = 16;
        lfs = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), lf)));
      } else if (end - first >= 16) {
        // A tail: one load that ends at `end`, its bits before `p` dropped.
        lfs = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(
                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(end - 16)), lf))) >>
              (16 - n);
      } else
#endif
      {
        if (n > 16) n = 16;
        for (size_t i = 0; i < n; ++i) lfs |= static_cast<unsigned>(p[i] == '\n') << i;
      }
      const char* next = p + n;
      for (; lfs != 0; lfs &= lfs - 1) {
        const char* lf_at = p + __builtin_ctz(lfs);
        pos = base + (lf_at + 1 - first);
        // (A byte before `lf_at` in this span has been examined already, by this call or an
        // earlier one; cr_last is the byte before the span.)
        if (!(lf_at > first ? lf_at[-1] == '\r' : cr_last)) {
          result = Fail(Error::kBareLf);
          break;
        }
        const size_t line_size = pos - line_start;
        line_start = pos;
        if (first_line_end == 0) {
          if (line_size == 2) {
            if (++empty_lines_ > lim.max_empty_lines) {
              result = Fail(Error::kEmptyLine);
              break;
            }
          } else {
            if (line_size > lim.max_first_line) {
              result = Fail(Error::kFirstLineTooLong);
              break;
            }
            head_start = pos - line_size;
            first_line_end = pos;
            if (2 + line_size > lim.max_header_bytes) {  // (the blank line still to come)
              result = Fail(Error::kHeadTooLarge);
              break;
            }
          }
          // A new bound (never below `pos`): search on from the next line with it.
          limit = LineLimit(lim, line_start, head_start, first_line_end == 0);
          end = first + (std::min(base + span.size(), limit) - base);
          next = lf_at + 1;
          break;
        }
        if (line_size == 2) {
          result = Result::kHead;  // within max_header_bytes: the LF came before the bound
          break;
        }
        if (++field_lines > lim.max_header_count) {
          result = Fail(Error::kTooManyFields);
          break;
        }
        // The head still needs at least its blank line.
        if (pos - head_start + 2 > lim.max_header_bytes) {
          result = Fail(Error::kHeadTooLarge);
          break;
        }
      }
      if (result != Result::kNeedMore) break;
      p = next;
    }
    if (result != Result::kNeedMore) break;
    // All of [pos, end) searched (p == end): the rest of the line is yet to come.
    pos = base + (end - first);
    cr_last = end[-1] == '\r';
  }
  examined_ += pos - from;
  pos_ = pos;
  line_start_ = line_start;
  head_start_ = head_start;
  first_line_end_ = first_line_end;
  field_lines_ = field_lines;
  cr_last_ = cr_last;
  return result;
}

const char* HeadScanner::CopyHead(const ChainBuffer& in) {
  const size_t n = pos_ - head_start_;
  scratch_.resize(n);
  in.CopyTo(scratch_.data(), n, head_start_);
  return scratch_.data();
}

}  // namespace trpc::http::detail
