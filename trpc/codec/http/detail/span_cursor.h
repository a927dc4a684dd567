#pragma once

#include <cstddef>
#include <string_view>

#include "trpc/base/chain_buffer.h"

namespace trpc::http::detail {

/// Finds the span of a ChainBuffer that holds a given offset, for a parser that resumes where it
/// stopped: it remembers the last span found, so going forward through a buffer that is only
/// appended to costs nothing per lookup (spans before the remembered one never move).
///
/// Thread contract: its parser's (no internal locking).
class SpanCursor {
 public:
  /// The span holding absolute offset `pos` (< in.size()); begin() is then that span's offset.
  std::string_view At(const ChainBuffer& in, size_t pos) {
    if (span_ < in.SpanCount()) {  // the common case: still in the remembered span
      std::string_view s = in.Span(span_);
      if (pos >= begin_ && pos - begin_ < s.size()) return s;
    }
    // Walk forward from the remembered span. A position before it only comes from a caller that
    // broke the append-only contract: start over then, so every access stays inside a span.
    if (span_ >= in.SpanCount() || begin_ > pos) span_ = begin_ = 0;
    for (;;) {
      std::string_view s = in.Span(span_);
      if (pos - begin_ < s.size()) return s;
      begin_ += s.size();
      if (++span_ == in.SpanCount()) span_ = begin_ = 0;
    }
  }
  /// Offset in the buffer of the span At() returned last.
  size_t begin() const { return begin_; }
  void Reset() { span_ = begin_ = 0; }

 private:
  size_t span_ = 0;   // index of the remembered span
  size_t begin_ = 0;  // its offset in the buffer
};

}  // namespace trpc::http::detail
