#include "trpc/config/detail/yaml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "trpc/base/suggest.h"

namespace trpc::config_detail {

namespace {

// Values longer than this are cut in messages, so one bad line cannot flood the log.
constexpr size_t kMaxShownValue = 64;

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

void ErrorSink::Fail(int line, std::string message) {
  if (failed_) return;
  failed_ = true;
  line_ = line;
  message_ = std::move(message);
}

int LineOf(const YAML::Node& node, int fallback) {
  if (!node.IsDefined()) return fallback;
  int line = node.Mark().line;
  return line >= 0 ? line + 1 : fallback;
}

std::string DescribeNode(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
      return "nothing";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& s = node.Scalar();
  if (s.size() > kMaxShownValue) return fmt::format("'{}...'", s.substr(0, kMaxShownValue));
  return fmt::format("'{}'", s);
}

bool ParseDecimal(const YAML::Node& node, uint64_t* out) {
  if (!node.IsScalar()) return false;
  const std::string& s = node.Scalar();
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

bool UintRule::Accepts(uint64_t v) const {
  if (v < lo || v > hi) return false;
  if (power_of_two && !IsPowerOfTwo(v)) return false;
  return multiple_of <= 1 || v % multiple_of == 0;
}

std::string UintRule::Describe() const {
  std::string what = "an integer";
  if (power_of_two) {
    what = "a power of two";
  } else if (multiple_of > 1) {
    what = fmt::format("a multiple of {}", multiple_of);
  }
  return fmt::format("{} in {}..{}", what, lo, hi);
}

MapReader::MapReader(const YAML::Node& node, std::string path, int fallback_line, ErrorSink* sink,
                     std::initializer_list<std::string_view> known_keys)
    : path_(std::move(path)), line_(fallback_line), sink_(sink), known_keys_(known_keys) {
  if (sink_->failed() || !node.IsDefined() || node.IsNull()) return;
  line_ = LineOf(node, fallback_line);
  if (!node.IsMap()) {
    FailMap(fmt::format("expected a mapping, got {}", DescribeNode(node)));
    return;
  }
  for (const auto& pair : node) {
    // Copies: yaml-cpp's iterator hands out proxies, so references into it would dangle.
    YAML::Node key = pair.first;
    int key_line = LineOf(key, line_);
    if (!key.IsScalar()) {
      sink_->Fail(key_line,
                  fmt::format("keys must be strings, got {} {}", DescribeNode(key), Where()));
      return;
    }
    const std::string& name = key.Scalar();
    if (std::find(known_keys_.begin(), known_keys_.end(), name) == known_keys_.end()) {
      std::string msg = fmt::format("unknown key '{}' {}", name, Where());
      std::string_view best = ClosestName(name, known_keys_);
      if (!best.empty()) msg += fmt::format(" (did you mean '{}'?)", best);
      sink_->Fail(key_line, std::move(msg));
      return;
    }
    if (const Entry* first = FindEntry(name)) {
      sink_->Fail(key_line, fmt::format("duplicate key '{}' {} (first on line {})", name, Where(),
                                        first->key_line));
      return;
    }
    entries_.push_back(Entry{name, key_line, pair.second});
  }
}

std::string MapReader::PathOf(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return fmt::format("{}.{}", path_, key);
}

std::string MapReader::Where() const {
  if (path_.empty()) return "at the top level";
  return "in " + path_;
}

const MapReader::Entry* MapReader::FindEntry(std::string_view key) const {
  // Reading a key that is not in the known list is a bug in the schema code, not in the file.
  assert(std::find(known_keys_.begin(), known_keys_.end(), key) != known_keys_.end());
  for (const Entry& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

const MapReader::Entry* MapReader::Lookup(std::string_view key, Presence presence) const {
  if (sink_->failed()) return nullptr;
  const Entry* e = FindEntry(key);
  if (e == nullptr && presence == Presence::kRequired) {
    FailMap(fmt::format("missing required key '{}'", key));
  }
  return e;
}

int MapReader::ValueLine(std::string_view key) const {
  const Entry* e = FindEntry(key);
  if (e == nullptr) return line_;
  // yaml-cpp places an empty (null) value at the start of the next token, often the next line.
  if (e->value.IsNull()) return e->key_line;
  return LineOf(e->value, e->key_line);
}

void MapReader::FailValue(std::string_view key, std::string_view message) const {
  sink_->Fail(ValueLine(key), fmt::format("{}: {}", PathOf(key), message));
}

void MapReader::FailMap(std::string_view message) const {
  if (path_.empty()) {
    sink_->Fail(line_, fmt::format("top level: {}", message));
  } else {
    sink_->Fail(line_, fmt::format("{}: {}", path_, message));
  }
}

void MapReader::String(std::string_view key, std::string* out, Presence presence) {
  const Entry* e = Lookup(key, presence);
  if (e == nullptr) return;
  if (!e->value.IsScalar()) {
    FailValue(key, fmt::format("expected a string, got {}", DescribeNode(e->value)));
    return;
  }
  *out = e->value.Scalar();
}

void MapReader::NonEmptyString(std::string_view key, std::string* out, Presence presence) {
  const Entry* e = Lookup(key, presence);
  if (e == nullptr) return;
  if (!e->value.IsScalar() || e->value.Scalar().empty()) {
    FailValue(key, fmt::format("expected a non-empty string, got {}", DescribeNode(e->value)));
    return;
  }
  *out = e->value.Scalar();
}

void MapReader::ScalarMap(std::string_view key, std::map<std::string, std::string>* out,
                          std::map<std::string, int>* lines) {
  const Entry* e = Lookup(key, Presence::kOptional);
  if (e == nullptr || e->value.IsNull()) return;
  if (!e->value.IsMap()) {
    FailValue(key,
              fmt::format("expected a mapping of names to values, got {}", DescribeNode(e->value)));
    return;
  }
  std::map<std::string, std::string> values;
  std::map<std::string, int> value_lines;
  for (const auto& kv : e->value) {
    int line = LineOf(kv.second, LineOf(kv.first, e->key_line));
    std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (name.empty() || !kv.second.IsScalar()) {
      sink_->Fail(line, fmt::format("{}: expected 'name: value' pairs of scalars", PathOf(key)));
      return;
    }
    if (!values.emplace(name, kv.second.Scalar()).second) {
      sink_->Fail(line, fmt::format("{}.{}: given twice", PathOf(key), name));
      return;
    }
    value_lines[name] = line;
  }
  *out = std::move(values);
  if (lines != nullptr) *lines = std::move(value_lines);
}

void MapReader::NamedScalarMaps(
    std::string_view key,
    const std::function<void(const std::string&, int, const std::map<std::string, std::string>&,
                             const std::map<std::string, int>&)>& fn) {
  const Entry* e = Lookup(key, Presence::kOptional);
  if (e == nullptr || e->value.IsNull()) return;
  if (!e->value.IsMap()) {
    FailValue(key, fmt::format("expected a mapping of plug-in names to their settings, got {}",
                               DescribeNode(e->value)));
    return;
  }
  std::map<std::string, int> seen;
  for (const auto& kv : e->value) {
    int name_line = LineOf(kv.first, e->key_line);
    std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (name.empty()) {
      sink_->Fail(name_line, fmt::format("{}: expected plug-in names as keys", PathOf(key)));
      return;
    }
    if (!seen.emplace(name, name_line).second) {
      sink_->Fail(name_line, fmt::format("{}.{}: given twice", PathOf(key), name));
      return;
    }
    std::map<std::string, std::string> values;
    std::map<std::string, int> lines;
    if (!kv.second.IsNull()) {
      if (!kv.second.IsMap()) {
        sink_->Fail(LineOf(kv.second, name_line),
                    fmt::format("{}.{}: expected a mapping of settings, got {}", PathOf(key), name,
                                DescribeNode(kv.second)));
        return;
      }
      // One value: a scalar, or a list of scalars (joined with ','); false after a failure.
      auto add = [&](const std::string& k, const YAML::Node& v, int line) {
        std::string text;
        bool scalars = v.IsScalar() || v.IsSequence();
        if (v.IsScalar()) {
          text = v.Scalar();
        } else if (v.IsSequence()) {
          for (const auto& element : v) {
            scalars = scalars && element.IsScalar();
            if (scalars) text += (text.empty() ? "" : ",") + element.Scalar();
          }
        }
        if (k.empty() || !scalars) {
          sink_->Fail(line, fmt::format("{}.{}: expected 'name: value' pairs of scalars (or "
                                        "lists of them, or one level of such mappings)",
                                        PathOf(key), name));
          return false;
        }
        if (!values.emplace(k, text).second) {
          sink_->Fail(line, fmt::format("{}.{}.{}: given twice", PathOf(key), name, k));
          return false;
        }
        lines[k] = line;
        return true;
      };
      for (const auto& item : kv.second) {
        int line = LineOf(item.second, LineOf(item.first, name_line));
        std::string k = item.first.IsScalar() ? item.first.Scalar() : "";
        if (!item.second.IsMap()) {
          if (!add(k, item.second, line)) return;
          continue;
        }
        // A nested mapping (`ssl: {enable: true}`) gives dotted keys ("ssl.enable"); the map's
        // own line is kept under its key, for messages about it as a whole.
        lines[k] = LineOf(item.first, name_line);  // the key's line (a block map's values
                                                   // start on the next)
        for (const auto& sub : item.second) {
          const std::string sk = sub.first.IsScalar() ? sub.first.Scalar() : "";
          if (!add(sk.empty() ? sk : k + "." + sk, sub.second,
                   LineOf(sub.second, LineOf(sub.first, line)))) {
            return;
          }
        }
      }
    }
    fn(name, name_line, values, lines);
    if (!ok()) return;
  }
}

void MapReader::StringList(std::string_view key, std::vector<std::string>* out) {
  const Entry* e = Lookup(key, Presence::kOptional);
  if (e == nullptr || e->value.IsNull()) return;
  if (!e->value.IsSequence()) {
    FailValue(key, fmt::format("expected a list of strings, got {}", DescribeNode(e->value)));
    return;
  }
  std::vector<std::string> values;
  size_t i = 0;
  for (const YAML::Node& element : e->value) {
    int line = LineOf(element, e->key_line);
    std::string element_path = fmt::format("{}[{}]", PathOf(key), i++);
    if (!element.IsScalar() || element.Scalar().empty()) {
      sink_->Fail(line, fmt::format("{}: expected a non-empty string, got {}", element_path,
                                    DescribeNode(element)));
      return;
    }
    if (std::find(values.begin(), values.end(), element.Scalar()) != values.end()) {
      sink_->Fail(line, fmt::format("{}: '{}' is listed twice", element_path, element.Scalar()));
      return;
    }
    values.push_back(element.Scalar());
  }
  *out = std::move(values);
}

void MapReader::OneOf(std::string_view key, std::initializer_list<std::string_view> allowed,
                      std::string* out) {
  const Entry* e = Lookup(key, Presence::kOptional);
  if (e == nullptr) return;
  if (e->value.IsScalar() &&
      std::find(allowed.begin(), allowed.end(), e->value.Scalar()) != allowed.end()) {
    *out = e->value.Scalar();
    return;
  }
  std::string choices;
  for (std::string_view a : allowed) {
    if (!choices.empty()) choices += '|';
    choices += a;
  }
  FailValue(key, fmt::format("expected one of {}, got {}", choices, DescribeNode(e->value)));
}

bool MapReader::ReadUint(std::string_view key, const UintRule& rule, Presence presence,
                         uint64_t* out) {
  const Entry* e = Lookup(key, presence);
  if (e == nullptr) return false;
  uint64_t v = 0;
  if (!ParseDecimal(e->value, &v) || !rule.Accepts(v)) {
    FailValue(key, fmt::format("expected {}, got {}", rule.Describe(), DescribeNode(e->value)));
    return false;
  }
  *out = v;
  return true;
}

MapReader MapReader::Map(std::string_view key,
                         std::initializer_list<std::string_view> known_keys) const {
  const Entry* e = Lookup(key, Presence::kOptional);
  if (e == nullptr) return MapReader(YAML::Node(), PathOf(key), line_, sink_, known_keys);
  return MapReader(e->value, PathOf(key), e->key_line, sink_, known_keys);
}

void MapReader::ForEachMap(std::string_view key, std::initializer_list<std::string_view> known_keys,
                           const std::function<void(MapReader&, size_t)>& fn) const {
  const Entry* e = Lookup(key, Presence::kOptional);
  if (e == nullptr || e->value.IsNull()) return;
  if (!e->value.IsSequence()) {
    FailValue(key, fmt::format("expected a list, got {}", DescribeNode(e->value)));
    return;
  }
  size_t i = 0;
  for (const YAML::Node& element : e->value) {
    if (sink_->failed()) return;
    std::string element_path = fmt::format("{}[{}]", PathOf(key), i);
    if (!element.IsMap()) {
      // A null element ("- " alone) is a mistake here too: a list entry needs its keys.
      sink_->Fail(LineOf(element, e->key_line), fmt::format("{}: expected a mapping, got {}",
                                                            element_path, DescribeNode(element)));
      return;
    }
    MapReader reader(element, std::move(element_path), e->key_line, sink_, known_keys);
    fn(reader, i);
    ++i;
  }
}

}  // namespace trpc::config_detail
