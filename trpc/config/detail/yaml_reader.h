#pragma once

#include <yaml-cpp/yaml.h>

#include <cassert>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace trpc::config_detail {

/// Keeps the first error found while reading one document. Later errors are dropped, so the user
/// sees the root cause and not its echoes. Owned by the caller of the readers; one per load,
/// not thread-safe.
class ErrorSink {
 public:
  /// Records `message` at 1-based `line`, unless an error is already recorded.
  void Fail(int line, std::string message);

  bool failed() const { return failed_; }
  int line() const { return line_; }
  const std::string& message() const { return message_; }

 private:
  bool failed_ = false;
  int line_ = 1;
  std::string message_;
};

/// The 1-based line of `node`, or `fallback` when yaml-cpp gave it no position.
int LineOf(const YAML::Node& node, int fallback);

/// How a value is shown after "got": 'abc', null, a mapping, a list.
std::string DescribeNode(const YAML::Node& node);

/// Parses a plain decimal integer scalar ("0", "65535"; quoting is allowed). Rejects signs,
/// booleans, hex, floats, underscores and anything that overflows uint64, so "-1" or "true" can
/// never wrap into a large unsigned value.
bool ParseDecimal(const YAML::Node& node, uint64_t* out);

/// The unsigned values a key accepts: lo..hi, optionally only multiples or only powers of two.
struct UintRule {
  uint64_t lo = 0;
  uint64_t hi = std::numeric_limits<uint64_t>::max();
  uint64_t multiple_of = 1;
  bool power_of_two = false;

  bool Accepts(uint64_t v) const;
  /// "an integer in 0..65535", "a multiple of 4096 in 16384..67108864", ...
  std::string Describe() const;
};

enum class Presence { kOptional, kRequired };

/// Reads one YAML mapping against the fixed list of keys it may hold.
///
/// Construction checks the shape first: the node must be a mapping (absent or null counts as
/// empty), every key must be in `known_keys` and appear once. Then typed getters read values
/// into the caller's fields; an absent optional key leaves the field (its default) untouched.
/// Every error goes to the shared ErrorSink as "path.key: what is wrong" with the line of the
/// offending node; once the sink holds an error, every call is a no-op. `path` names the map in
/// messages ("server.service[0]"; empty at the top level).
///
/// `known_keys` are kept as views: pass string literals. Holds copies of yaml-cpp node handles;
/// use from one thread.
class MapReader {
 public:
  /// `fallback_line` is used when the map has no position (absent or null).
  MapReader(const YAML::Node& node, std::string path, int fallback_line, ErrorSink* sink,
            std::initializer_list<std::string_view> known_keys);

  bool ok() const { return !sink_->failed(); }
  const std::string& path() const { return path_; }
  /// 1-based line of the map itself: where "missing required key" errors point.
  int line() const { return line_; }
  /// "server.port" for key "port" of map "server".
  std::string PathOf(std::string_view key) const;

  bool Has(std::string_view key) const { return FindEntry(key) != nullptr; }
  /// No keys (the map is absent, null or `{}`).
  bool empty() const { return entries_.empty(); }
  /// Line of the key's value (of the key itself when the value is null); line() if absent.
  int ValueLine(std::string_view key) const;

  /// Any scalar, empty allowed.
  void String(std::string_view key, std::string* out, Presence presence = Presence::kOptional);
  /// Any non-empty scalar.
  void NonEmptyString(std::string_view key, std::string* out,
                      Presence presence = Presence::kOptional);
  /// A list of non-empty scalars, each appearing once (absent or null: `out` untouched).
  void StringList(std::string_view key, std::vector<std::string>* out);
  /// A mapping of scalar names to scalar values, names unchecked (absent or null: `out`
  /// untouched); `lines`, if given, gets each value's line.
  void ScalarMap(std::string_view key, std::map<std::string, std::string>* out,
                 std::map<std::string, int>* lines = nullptr);
  /// A mapping of free names to mappings of scalars (`plugins.selector: {etcd: {k: v}}`):
  /// `fn(name, line of name, values, lines of values)` for each, in order. A list of scalars
  /// is one value, joined with ','; a nested mapping (`ssl: {enable: true}`) gives dotted keys
  /// ("ssl.enable"), and `lines` also holds the mapping's own key ("ssl").
  void NamedScalarMaps(
      std::string_view key,
      const std::function<void(const std::string&, int, const std::map<std::string, std::string>&,
                               const std::map<std::string, int>&)>& fn);
  /// One of `allowed`, compared exactly.
  void OneOf(std::string_view key, std::initializer_list<std::string_view> allowed,
             std::string* out);
  /// An unsigned integer accepted by `rule`; `rule.hi` must fit in T.
  template <typename T>
  void Uint(std::string_view key, const UintRule& rule, T* out,
            Presence presence = Presence::kOptional) {
    assert(rule.hi <= std::numeric_limits<T>::max());
    uint64_t v = 0;
    if (ReadUint(key, rule, presence, &v)) *out = static_cast<T>(v);
  }

  /// The nested mapping under `key` (absent or null: an empty one).
  MapReader Map(std::string_view key, std::initializer_list<std::string_view> known_keys) const;
  /// Calls `fn` for each element of the list under `key` (absent or null: no elements). Each
  /// element must be a mapping; its reader is named "path.key[i]".
  void ForEachMap(std::string_view key, std::initializer_list<std::string_view> known_keys,
                  const std::function<void(MapReader&, size_t)>& fn) const;

  /// Reports "path.key: message" at the line of the key's value.
  void FailValue(std::string_view key, std::string_view message) const;
  /// Reports "path: message" at the line of the map.
  void FailMap(std::string_view message) const;

 private:
  struct Entry {
    std::string key;
    int key_line;
    YAML::Node value;
  };

  const Entry* FindEntry(std::string_view key) const;
  // The entry for `key` if present and no error is pending; reports a missing required key.
  const Entry* Lookup(std::string_view key, Presence presence) const;
  bool ReadUint(std::string_view key, const UintRule& rule, Presence presence, uint64_t* out);
  // "in server.service[0]" or "at the top level".
  std::string Where() const;

  std::string path_;
  int line_;
  ErrorSink* sink_;
  std::vector<std::string_view> known_keys_;
  std::vector<Entry> entries_;
};

}  // namespace trpc::config_detail
