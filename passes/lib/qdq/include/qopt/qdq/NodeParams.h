// The parameters of a QuantizeLinear or DequantizeLinear node (element type, scale, zero point,
// axis) read from constants, compared, and written back to a group of nodes that must agree
// (a QuantizeLinear and the DequantizeLinear nodes reading its output).
//
// Shared by relu6-asym and propagate-scales (libqopt_qdq; it holds no state).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt::qdq {

struct QuantParams {
  DataType type = DataType::UInt8;  // the integer type (ONNX's default without a zero point)
  DataType scaleType = DataType::Float;
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;  // one per scale
  std::vector<int64_t> scaleDims;   // as stored: {} for a scalar, {1} or {C}
  int64_t axis = 1;                 // meaningful when per axis

  bool perTensor() const { return scales.size() == 1; }
  double scale() const { return scales.front(); }
  int64_t zeroPoint() const { return zeroPoints.front(); }
  /// The integer range of `type`: [-128, 127] for int8, [0, 255] for uint8, ...
  int64_t qmin() const;
  int64_t qmax() const;
  /// The real values a per-tensor quantization can represent: [s*(qmin-zp), s*(qmax-zp)].
  double lowest() const { return scale() * static_cast<double>(qmin() - zeroPoint()); }
  double highest() const { return scale() * static_cast<double>(qmax() - zeroPoint()); }
  /// Same type, scales, zero points and (when per axis) axis.
  bool sameAs(const QuantParams& other) const;
  /// "uint8 scale 0.0235294 zero point 0" for remarks.
  std::string describe() const;
};

/// Per-tensor parameters for the range [lo, hi] (which must contain 0) in `type`: symmetric
/// (zero point 0) when `symmetric`, else the affine mapping of ONNX Runtime's quantizer.
QuantParams paramsForRange(double lo, double hi, DataType type, bool symmetric,
                           DataType scaleType = DataType::Float);

bool isQuantize(const Node* node);
bool isDequantize(const Node* node);

/// The parameters of a QuantizeLinear or DequantizeLinear, or nullopt with the reason in `why`:
/// scale or zero point not constant, blocked quantization, non-integer types.
std::optional<QuantParams> readQuantParams(const Node& node, std::string* why = nullptr);

/// Makes every node of `nodes` (QuantizeLinear/DequantizeLinear that share one quantized tensor)
/// use `params`: new scale and zero-point initializers named after `baseName`, the types of the
/// quantized values and any output_dtype attribute updated; constants nothing reads any more are
/// erased.
void writeQuantParams(std::span<Node* const> nodes, const QuantParams& params,
                      const std::string& baseName);

/// The DequantizeLinear nodes reading the output of QuantizeLinear `q`, or nullopt when anything
/// else reads it (or it is a graph output): then its type cannot change alone.
std::optional<std::vector<Node*>> dequantizersOf(const Node& q);

}  // namespace qopt::qdq
