// Where a linear op's weight comes from, and the weight rescaled per output channel.
//
// Three forms are folded:
//   Float                 constant float weight -> op
//   QuantizeDequantize    constant float weight -> QuantizeLinear -> DequantizeLinear -> op
//                         (QAT exports; scales and zero points may sit behind Constant/Cast)
//   Dequantize            constant integer weight -> DequantizeLinear -> op
// Scaling output channel c by f[c] multiplies the float weight by f[c]. For quantized weights
// the integers are kept: the scales become s[c] * |f[c]| and a negative f[c] negates the integers
// of its channel (which needs a zero point of 0 and a value other than the type's minimum); a
// per-tensor scale becomes per-channel when |f| differs between channels (opset >= 13).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "Refusal.h"
#include "WeightLayout.h"
#include "qopt/ir/Graph.h"

namespace qopt::foldbn {

struct QuantParams {
  std::vector<double> scale;  // one value (per tensor) or one per channel
  DataType scaleType = DataType::Float;
  std::vector<int64_t> scaleDims;
  std::vector<int64_t> zeroPoint;  // as many as `scale`; zeros when the input is absent
  bool hasZeroPoint = false;
  DataType integerType = DataType::UInt8;
  bool perChannel = false;
  int64_t axis = 0;  // normalised to the weight's rank when perChannel
};

struct WeightSource {
  enum class Kind { Float, QuantizeDequantize, Dequantize };
  Kind kind = Kind::Float;
  Value* weight = nullptr;     // the float weight, or the integers for Dequantize
  Node* quantize = nullptr;    // QuantizeDequantize only
  Node* dequantize = nullptr;  // QuantizeDequantize and Dequantize
  Tensor values;               // the weight's constant values
  QuantParams quant;           // QuantizeDequantize and Dequantize

  bool quantized() const { return kind != Kind::Float; }
  /// The element type the linear op computes in.
  DataType floatType() const { return quantized() ? quant.scaleType : values.dataType(); }
};

/// Reads input `index` of `linear`. nullopt, with the reason, when it is not one of the forms.
std::optional<WeightSource> resolveWeight(const Node& linear, size_t index, Refusal& refusal);

/// A node outside the chain (linear op, DequantizeLinear, QuantizeLinear) that reads part of
/// it, or nullptr when the chain belongs to `linear` alone. Graph outputs count as readers
/// (`*graphOutput` is set).
const Node* sharedWith(const WeightSource& source, const Node& linear, bool* graphOutput);

struct RescaledWeight {
  Tensor weight;  // the new float weight, or the new integers
  bool weightChanged = false;
  std::optional<Tensor> scale;      // quantized forms: the new scales
  std::optional<Tensor> zeroPoint;  // set when the zero point must be rewritten (per-channel now)
  std::optional<int64_t> newAxis;   // set when the quantization became per-channel
  int64_t snapped = 0;              // float elements moved to keep their integer (see .cpp)
};

/// Multiplies output channel c of the weight by factor[c], computing in double and rounding
/// once to the weight's type. `opset` is the model's default-domain opset.
std::optional<RescaledWeight> rescaleWeight(const WeightSource& source, const WeightLayout& layout,
                                            std::span<const double> factor, int64_t opset,
                                            Refusal& refusal);

}  // namespace qopt::foldbn
