// Why fold-bn left a node alone: a statistics counter (the same for every node refused for that
// reason, so reports can count them) and a message for the node's remark.
#pragma once

#include <string>
#include <utility>

namespace qopt::foldbn {

struct Refusal {
  std::string counter;  // "missed-shared-weight"
  std::string message;  // "the weight 'w' is also read by node 'conv2' (Conv)"
};

}  // namespace qopt::foldbn
