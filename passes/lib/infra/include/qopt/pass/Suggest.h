// "Did you mean" suggestions for names typed by users (pass names, option keys, enum values).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace qopt {

/// Edit distance counting insertions, deletions, substitutions and swaps of adjacent characters
/// (optimal string alignment), case-sensitive.
size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to `typed` when it is near enough to be a typo (distance at most a
/// third of the longer name, and at least 1 allowed), else the one candidate `typed` is a prefix
/// of (at least 3 characters typed), else nullopt. Ties go to the first.
std::optional<std::string> closestMatch(std::string_view typed,
                                        std::span<const std::string> candidates);

/// "; did you mean 'x'?" or "" when nothing is close.
std::string didYouMean(std::string_view typed, std::span<const std::string> candidates);

}  // namespace qopt
