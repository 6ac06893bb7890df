#include "qopt/pass/Suggest.h"

#include <algorithm>
#include <vector>

namespace qopt {

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, the most common
// typing slip ("cuont" for "count").
size_t editDistance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<size_t> twoBack(m + 1), previous(m + 1), current(m + 1);
  for (size_t j = 0; j <= m; ++j) previous[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    current[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], twoBack[j - 2] + 1);
      }
    }
    twoBack.swap(previous);
    previous.swap(current);
  }
  return previous[m];
}

std::optional<std::string> closestMatch(std::string_view typed,
                                        std::span<const std::string> candidates) {
  std::optional<std::string> best;
  size_t bestDistance = 0;
  for (const std::string& candidate : candidates) {
    size_t distance = editDistance(typed, candidate);
    size_t allowed = std::max<size_t>(1, std::max(typed.size(), candidate.size()) / 3);
    if (distance == 0 || distance > allowed) continue;
    if (!best || distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best || typed.size() < 3) return best;
  // A shortened name ("max-iter") suggests the one option it abbreviates.
  for (const std::string& candidate : candidates) {
    if (candidate.size() > typed.size() && candidate.starts_with(typed)) {
      if (best) return std::nullopt;  // ambiguous
      best = candidate;
    }
  }
  return best;
}

std::string didYouMean(std::string_view typed, std::span<const std::string> candidates) {
  std::optional<std::string> match = closestMatch(typed, candidates);
  return match ? "; did you mean '" + *match + "'?" : std::string();
}

}  // namespace qopt
