// Fuzz target: a watch stream from etcd's gateway (or anything a peer sends in its place) cut
// into JSON objects by naming::etcd::detail::JsonObjectSplitter, the way the watch feeds it: in
// pieces of whatever size the reads return.
//
// Input: byte 0 picks max_object_bytes (bits 6-7) and seeds the piece sizes (bits 0-5); byte 1,
// when not 0, is the object after which the callback says stop; the rest is the stream. The
// stream is fed three ways: whole, one byte per piece, and in pseudo-random pieces. Any of these
// aborts (they cannot be true of a correct splitter):
//   - the ways disagree on the objects emitted or on how the stream ended (fine, an error and
//     which, or stopped by the callback);
//   - an object that is not the stream's next bytes after whitespace (so never more bytes out
//     than in, and nothing invented, reordered or skipped), or one that does not start with '{'
//     and end with '}' or ']', or one over max_object_bytes;
//   - after a Feed that returned true: more than max_object_bytes held, or held bytes that
//     disagree with idle();
//   - a splitter that is not empty and usable again after Reset.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/naming/etcd/detail/json_splitter.h"

namespace {

using trpc::naming::etcd::detail::JsonObjectSplitter;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

struct Run {
  std::vector<std::string> objects;
  bool failed = false;
  std::string error;  // empty when the callback stopped it
  bool operator==(const Run&) const = default;
};

size_t PickMax(uint8_t mode) {
  switch (mode) {
    case 1:
      return 64;
    case 2:
      return 1;  // degenerate: no object fits
    case 3:
      return 300;
    default:
      return 16u << 20;  // the watch's own
  }
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Feeds `stream` in pieces of the sizes `next_piece()` returns.
template <typename NextPiece>
Run Feed(std::string_view stream, size_t max, size_t stop_after, NextPiece next_piece) {
  JsonObjectSplitter splitter(max);
  Run run;
  size_t expect_at = 0;  // where the next object must start, whitespace aside
  auto on_object = [&](std::string_view object) {
    Check(!object.empty() && object.size() <= max);
    Check(object.front() == '{' && (object.back() == '}' || object.back() == ']'));
    while (expect_at < stream.size() && IsSpace(stream[expect_at])) ++expect_at;
    Check(stream.substr(expect_at, object.size()) == object);
    expect_at += object.size();
    run.objects.emplace_back(object);
    return stop_after == 0 || run.objects.size() < stop_after;
  };
  size_t off = 0;
  while (off < stream.size()) {
    const size_t n = std::min(next_piece(), stream.size() - off);
    std::string err;
    const bool ok = splitter.Feed(stream.substr(off, n), on_object, &err);
    off += n;
    if (!ok) {
      run.failed = true;
      run.error = err;
      break;
    }
    Check(splitter.held_bytes() <= max);
    Check(splitter.idle() == (splitter.held_bytes() == 0));
    Check(expect_at + splitter.held_bytes() <= off);
  }
  splitter.Reset();
  Check(splitter.idle() && splitter.held_bytes() == 0);
  size_t after_reset = 0;
  std::string err;
  const bool fed = splitter.Feed(
      " {} ", [&](std::string_view o) { return ++after_reset, o == "{}"; }, &err);
  Check(fed == (max >= 2) && after_reset == (fed ? 1u : 0u));
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t max = PickMax(data[0] >> 6);
  uint32_t seed = data[0] & 63;
  const size_t stop_after = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Run whole = Feed(stream, max, stop_after, [] { return SIZE_MAX; });
  const Run bytewise = Feed(stream, max, stop_after, [] { return size_t{1}; });
  const Run random = Feed(stream, max, stop_after, [&seed] {
    seed = seed * 1103515245u + 12345u;  // any cheap generator will do: only variety matters
    return size_t{1} + (seed >> 16) % 48;
  });
  Check(whole == bytewise);
  Check(whole == random);
  return 0;
}
