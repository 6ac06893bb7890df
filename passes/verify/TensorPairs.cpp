#include "TensorPairs.h"

#include <unordered_map>

#include "qopt/analysis/Precision.h"

namespace qopt::verify {

TensorMatch matchTensors(const Graph& original, const Graph& current, const NameMap& names,
                         const std::map<std::string, analysis::ChannelAffine>& affines) {
  TensorMatch match;
  // When a pass fuses nodes (Conv + BatchNormalization), several original tensors follow the one
  // value that now computes the last of them: only that last one is compared, the others were
  // absorbed.
  std::unordered_map<const Value*, size_t> pairOf;
  for (const Node* node : original.allNodes()) {  // bodies included
    if (node->is("Constant")) continue;           // constants are compared where they are read
    for (const Value* out : node->outputs()) {
      if (out->isAbsent() || out->isGraphOutput()) continue;
      std::optional<std::string> now = names.currentName(out->name());
      std::vector<Value*> named;
      if (now) named = current.model().valuesNamed(*now);
      const Value* actual = named.size() == 1 ? named.front() : nullptr;
      if (actual == nullptr) {
        ++match.removed;
        continue;
      }
      if (auto it = pairOf.find(actual); it != pairOf.end()) {
        match.pairs[it->second].reference = nullptr;  // absorbed; dropped below
        ++match.removed;
      }
      pairOf[actual] = match.pairs.size();
      TensorPair pair;
      pair.tensor = out->name();
      pair.reference = out;
      pair.actual = actual;
      const Node* producer = actual->producer() ? actual->producer() : node;
      pair.node = analysis::layerName(*producer);
      pair.op = producer->opType();
      if (auto a = affines.find(pair.actual->name()); a != affines.end()) pair.affine = a->second;
      match.pairs.push_back(std::move(pair));
    }
  }
  std::erase_if(match.pairs, [](const TensorPair& p) { return p.reference == nullptr; });
  return match;
}

}  // namespace qopt::verify
