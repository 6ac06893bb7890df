// Checks of each QuantizeLinear / DequantizeLinear node against what TensorRT's ONNX parser
// accepts (onnx-tensorrt's QuantDequantLinearHelper; docs/tensorrt.md): zero points,
// quantized types, scales, per-channel axes and their lengths, opset.
#pragma once

#include <vector>

#include "Finding.h"
#include "qopt/ir/DataType.h"
#include "qopt/pass/Target.h"

namespace qopt {
class Model;
class Node;
}  // namespace qopt

namespace qopt::checktrt {

/// Appends, in graph order, the findings about every Q/DQ node of `model` (subgraphs included)
/// for TensorRT `version`. A DequantizeLinear that reads a QuantizeLinear with the same scale,
/// zero point and axis is reported with it, not again.
void checkQdqNodes(const Model& model, const TrtVersion& version, std::vector<Finding>& findings);

/// The integer (or float8) type on the quantized side of a Q/DQ node: the zero point's type
/// decides it (as in TensorRT's parser), else the data's, else QuantizeLinear's default UINT8.
DataType quantizedType(const Node& node);

}  // namespace qopt::checktrt
