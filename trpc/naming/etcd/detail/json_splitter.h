#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace trpc::naming::etcd::detail {

/// Cuts a stream of concatenated JSON objects (`{...}{...}` or one per line, as etcd's gateway
/// writes a watch) into whole objects, however the stream is split into pieces: a piece may
/// hold part of an object, or several. It only tracks strings, escapes and bracket depth; the
/// objects' contents are left to the JSON parser. Between objects only whitespace may stand.
///
/// Thread contract: one stream's reader (no internal locking).
class JsonObjectSplitter {
 public:
  /// Gets each whole object; false stops Feed (which then returns false with an empty error).
  using OnObject = std::function<bool(std::string_view object)>;

  explicit JsonObjectSplitter(size_t max_object_bytes = 16u << 20)
      : max_object_bytes_(max_object_bytes) {}

  /// Feeds the next piece of the stream. False with `*err` on a byte outside an object that is
  /// not whitespace, a bracket closed that was never opened, or an object over the limit;
  /// after an error the splitter must be Reset.
  bool Feed(std::string_view piece, const OnObject& on_object, std::string* err);
  /// True when no object is partly read.
  bool idle() const { return depth_ == 0; }
  /// Bytes of the object partly read that the splitter keeps (at most max_object_bytes after a
  /// Feed that returned true).
  size_t held_bytes() const { return object_.size(); }
  void Reset();

 private:
  const size_t max_object_bytes_;
  std::string object_;  // the object being read
  size_t depth_ = 0;    // open brackets ({ or [) of the object being read
  bool in_string_ = false;
  bool escape_ = false;  // the previous byte in a string was a backslash
};

}  // namespace trpc::naming::etcd::detail
