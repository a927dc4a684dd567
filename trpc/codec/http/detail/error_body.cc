#include "trpc/codec/http/detail/error_body.h"

#include <cstdint>
#include <limits>
#include <utility>

namespace trpc::http::detail {

namespace {

constexpr int kMaxDepth = 16;

// A cursor over the JSON text; every method returns false on malformed input.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  void Space() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    Space();
    return i_ == s_.size();
  }
  char Peek() {
    Space();
    return i_ < s_.size() ? s_[i_] : '\0';
  }

  // A string, unescaped into `*out` (null: skipped).
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        if (out != nullptr) out->push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      char plain = 0;
      switch (e) {
        case '"':
          plain = '"';
          break;
        case '\\':
          plain = '\\';
          break;
        case '/':
          plain = '/';
          break;
        case 'b':
          plain = '\b';
          break;
        case 'f':
          plain = '\f';
          break;
        case 'n':
          plain = '\n';
          break;
        case 'r':
          plain = '\r';
          break;
        case 't':
          plain = '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair
            uint32_t low = 0;
            if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') return false;
            i_ += 2;
            if (!Hex4(&low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return false;
          }
          if (out != nullptr) AppendUtf8(cp, out);
          continue;
        }
        default:
          return false;
      }
      if (out != nullptr) out->push_back(plain);
    }
    return false;
  }

  // A number; `*out` (when given) is set if it is an integer that fits 32 bits.
  bool Number(int32_t* out, bool* is_int32) {
    Space();
    const size_t start = i_;
    bool negative = false;
    if (i_ < s_.size() && s_[i_] == '-') {
      negative = true;
      ++i_;
    }
    if (i_ >= s_.size() || !Digit(s_[i_])) return false;
    int64_t v = 0;
    bool fits = true;
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < s_.size() && Digit(s_[i_])) {
        v = v * 10 + (s_[i_++] - '0');
        if (v > int64_t{std::numeric_limits<int32_t>::max()} + 1) {
          fits = false;
          v = 0;
        }
      }
    }
    bool integer = true;
    if (i_ < s_.size() && s_[i_] == '.') {
      integer = false;
      ++i_;
      if (i_ >= s_.size() || !Digit(s_[i_])) return false;
      while (i_ < s_.size() && Digit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      integer = false;
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !Digit(s_[i_])) return false;
      while (i_ < s_.size() && Digit(s_[i_])) ++i_;
    }
    if (negative) v = -v;
    *is_int32 = integer && fits && i_ > start && v >= std::numeric_limits<int32_t>::min() &&
                v <= std::numeric_limits<int32_t>::max();
    if (*is_int32 && out != nullptr) *out = static_cast<int32_t>(v);
    return true;
  }

  // Any value, skipped.
  bool Skip(int depth) {
    if (depth > kMaxDepth) return false;
    const char c = Peek();
    if (c == '"') return String(nullptr);
    if (c == '{') {
      ++i_;
      if (Eat('}')) return true;
      do {
        if (!String(nullptr) || !Eat(':') || !Skip(depth + 1)) return false;
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      ++i_;
      if (Eat(']')) return true;
      do {
        if (!Skip(depth + 1)) return false;
      } while (Eat(','));
      return Eat(']');
    }
    if (Word("true") || Word("false") || Word("null")) return true;
    bool is_int = false;
    return Number(nullptr, &is_int);
  }

 private:
  static bool Digit(char c) { return c >= '0' && c <= '9'; }

  bool Word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  bool Hex4(uint32_t* v) {
    if (i_ + 4 > s_.size()) return false;
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return false;
      *v = *v << 4 | static_cast<uint32_t>(d);
    }
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | cp >> 6));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | cp >> 12));
      out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | cp >> 18));
      out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

bool ParseErrorBody(std::string_view json, ErrorBody* out) {
  Reader r(json);
  ErrorBody body;
  if (!r.Eat('{')) return false;
  if (!r.Eat('}')) {
    do {
      std::string key;
      if (!r.String(&key) || !r.Eat(':')) return false;
      if (key == "code" || key == "func_code") {
        int32_t v = 0;
        bool is_int32 = false;
        if (!r.Number(&v, &is_int32) || !is_int32) return false;
        (key == "code" ? body.code : body.func_code) = v;
        body.has_code = true;
      } else if (key == "message") {
        body.message.clear();
        if (!r.String(&body.message)) return false;
      } else if (!r.Skip(1)) {
        return false;
      }
    } while (r.Eat(','));
    if (!r.Eat('}')) return false;
  }
  if (!r.AtEnd()) return false;
  *out = std::move(body);
  return true;
}

}  // namespace trpc::http::detail
