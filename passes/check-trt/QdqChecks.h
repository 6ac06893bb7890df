// Checks of each QuantizeLinear / DequantizeLinear node against what TensorRT's ONNX parser
// accepts (onnx-tensorrt's QuantDequantLinearHelper; docs/tensorrt.md): zero points,
// quantized types, scales, per-channel axes and their lengths, opset.
#pragma once

#include <vector>

#include "Finding.h"
#include "qopt/pass/Target.h"

namespace qopt {
class Model;
}

namespace qopt::checktrt {

/// Appends, in graph order, the findings about every Q/DQ node of `model` (subgraphs included)
/// for TensorRT `version`. A DequantizeLinear that reads a QuantizeLinear with the same scale,
/// zero point and axis is reported with it, not again.
void checkQdqNodes(const Model& model, const TrtVersion& version, std::vector<Finding>& findings);

}  // namespace qopt::checktrt
