// The layers bias-correct corrects, and the float layer each is compared with.
//
// A layer is a Conv, Gemm or MatMul of the current model whose weight (input 1) is read from a
// DequantizeLinear of a constant. Its float counterpart comes from the pipeline's input model
// (the name map matches the layer's output and its activation input across the passes): the
// chain of nodes there that turns the activation into the output reading nothing else at run
// time, e.g. the Conv and BatchNormalization that fold-bn folded into the quantized Conv, with
// their original float weights.
//
// A pass between the input model and insert-qdq may have rescaled the layer's channels exactly
// and recorded it (qopt/analysis/ChannelAffine.h): equalize divides a layer's input channels and
// multiplies its weights to match, or scales a layer's output channels for the next layer to
// undo. The float layer then reads the activation with its input's record undone, and its
// output gets the output's record again, so that it computes what the quantized layer should.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "qopt/analysis/ChannelAffine.h"

#include "qopt/ir/Graph.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/PassContext.h"

namespace qopt::biascorrect {

struct CorrectedLayer {
  Node* node = nullptr;    // the quantized layer, in the current model
  size_t position = 0;     // its index in the current model's Graph::allNodes()
  Value* input = nullptr;  // its activation as a float: before its QuantizeLinear, if any
  /// What the float layer reads: `input`, or, when a pass put a Mul by a constant before the
  /// layer and rescaled its weights to match (equalize's inserted division), that Mul's input.
  Value* chainInput = nullptr;
  bool inputQuantized = false;
  int64_t channels = 0;  // output channels (the bias length)
  /// The float layer in the input model, first node reading the activation, last node giving
  /// the output.
  std::vector<const Node*> floatChain;
  /// The records of the activation and of the output, with the dims of a constant that
  /// broadcasts one value per channel against each.
  std::optional<analysis::ChannelAffine> inputAffine, outputAffine;
  std::vector<int64_t> inputAffineDims, outputAffineDims;
  std::string name;  // for remarks
};

/// The axis of the output channels: 1 for Conv, the last for Gemm and MatMul.
int64_t channelAxis(const Node& layer, int64_t outputRank);

/// Every correctable layer of `model`'s main graph in graph order; those that cannot be
/// corrected get a missed remark with the reason. `affines` are the pipeline's channel records
/// by current tensor name (analysis::channelAffines).
std::vector<CorrectedLayer> findCorrectedLayers(
    Model& model, const Model& original, const NameMap& names,
    const std::map<std::string, analysis::ChannelAffine>& affines, PassResult& result);

}  // namespace qopt::biascorrect
