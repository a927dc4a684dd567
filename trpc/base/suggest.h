#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

// "Did you mean" for names a user typed: config keys, filter and protocol names.

namespace trpc {

/// Levenshtein distance (insertions, deletions, substitutions). O(|a| x |b|): for short names.
size_t EditDistance(std::string_view a, std::string_view b);

/// The name in `known` that `name` is most likely a misspelling of: the closest one at distance
/// 1 or 2 that is longer than that distance (so "x" suggests nothing), the first of equals.
/// Empty when none is that close.
std::string_view ClosestName(std::string_view name, const std::vector<std::string_view>& known);

/// What to append to "no X named 'name' is registered": " (did you mean 'auth'? registered:
/// auth, metrics)", or without the suggestion when none is close, or " (none is registered)".
/// `registered` is listed in the order given.
std::string RegisteredNamesHint(std::string_view name, const std::vector<std::string>& registered);

}  // namespace trpc
