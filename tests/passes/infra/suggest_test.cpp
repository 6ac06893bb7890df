// Edit distance and "did you mean".
#include <gtest/gtest.h>

#include "qopt/pass/Suggest.h"

namespace qopt {
namespace {

TEST(Suggest, EditDistance) {
  EXPECT_EQ(editDistance("", ""), 0u);
  EXPECT_EQ(editDistance("dce", ""), 3u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("canonicalise", "canonicalize"), 1u);
  EXPECT_EQ(editDistance("cuont", "count"), 1u);  // a swap is one edit
  EXPECT_EQ(editDistance("ab", "ba"), 1u);
}

TEST(Suggest, SuggestsOnlyNearMisses) {
  std::vector<std::string> names = {"dce", "canonicalize", "topo-sort", "eliminate-identity"};
  EXPECT_EQ(closestMatch("canonicalise", names), "canonicalize");
  EXPECT_EQ(closestMatch("topo_sort", names), "topo-sort");
  EXPECT_EQ(closestMatch("dcee", names), "dce");
  EXPECT_EQ(closestMatch("quantize", names), std::nullopt);
  EXPECT_EQ(closestMatch("dce", names), std::nullopt);  // exact: nothing to suggest
  EXPECT_EQ(didYouMean("topo-srot", names), "; did you mean 'topo-sort'?");
  EXPECT_EQ(didYouMean("zzz", names), "");
  // Prefixes of exactly one name.
  EXPECT_EQ(closestMatch("elim", names), "eliminate-identity");
  std::vector<std::string> options = {"max-iterations", "max-items-total"};
  EXPECT_EQ(closestMatch("max-it", options), std::nullopt);  // a prefix of both
  EXPECT_EQ(closestMatch("max-itera", options), "max-iterations");
}

}  // namespace
}  // namespace qopt
