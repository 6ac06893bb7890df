#include "qopt/pass/Suggest.h"

#include <algorithm>
#include <vector>

namespace qopt {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
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
  return best;
}

std::string didYouMean(std::string_view typed, std::span<const std::string> candidates) {
  std::optional<std::string> match = closestMatch(typed, candidates);
  return match ? "; did you mean '" + *match + "'?" : std::string();
}

}  // namespace qopt
