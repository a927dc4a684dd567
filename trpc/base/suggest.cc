#include "trpc/base/suggest.h"

#include <algorithm>

namespace trpc {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string_view ClosestName(std::string_view name, const std::vector<std::string_view>& known) {
  std::string_view best;
  size_t best_distance = 3;  // only close misspellings
  for (std::string_view k : known) {
    size_t d = EditDistance(name, k);
    if (d < best_distance && d < k.size()) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

std::string RegisteredNamesHint(std::string_view name, const std::vector<std::string>& registered) {
  if (registered.empty()) return " (none is registered)";
  std::string out = " (";
  std::string_view best = ClosestName(name, {registered.begin(), registered.end()});
  if (!best.empty()) {
    out += "did you mean '";
    out += best;
    out += "'? ";
  }
  out += "registered: ";
  for (size_t i = 0; i < registered.size(); ++i) {
    if (i > 0) out += ", ";
    out += registered[i];
  }
  out += ")";
  return out;
}

}  // namespace trpc
