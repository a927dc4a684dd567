#include "trpc/naming/etcd/detail/json_splitter.h"

namespace trpc::naming::etcd::detail {

void JsonObjectSplitter::Reset() {
  object_.clear();
  depth_ = 0;
  in_string_ = false;
  escape_ = false;
}

bool JsonObjectSplitter::Feed(std::string_view piece, const OnObject& on_object, std::string* err) {
  size_t start = 0;  // where the current object's bytes in `piece` begin
  for (size_t i = 0; i < piece.size(); ++i) {
    const char c = piece[i];
    if (depth_ == 0) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
      if (c != '{') {
        *err = "unexpected byte outside a JSON object";
        return false;
      }
      depth_ = 1;
      start = i;
      continue;
    }
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        break;
      case '{':
      case '[':
        ++depth_;
        break;
      case '}':
      case ']':
        if (--depth_ == 0) {
          object_.append(piece.data() + start, i + 1 - start);
          if (object_.size() > max_object_bytes_) {
            *err = "JSON object over " + std::to_string(max_object_bytes_) + " bytes";
            return false;
          }
          std::string whole;
          whole.swap(object_);
          if (!on_object(whole)) {
            err->clear();
            return false;
          }
        }
        break;
      default:
        break;
    }
  }
  if (depth_ > 0) {
    object_.append(piece.data() + start, piece.size() - start);
    if (object_.size() > max_object_bytes_) {
      *err = "JSON object over " + std::to_string(max_object_bytes_) + " bytes";
      return false;
    }
  }
  return true;
}

}  // namespace trpc::naming::etcd::detail
