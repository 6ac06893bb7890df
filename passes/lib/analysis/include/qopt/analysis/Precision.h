// The precision each compute layer will run in on TensorRT, read from the graph alone.
//
// TensorRT's explicit quantization: a Conv, ConvTranspose, Gemm or MatMul runs in INT8 when its
// data input and its weight (for MatMul of two activations: both inputs) come through
// DequantizeLinear of 8-bit (or narrower) integers, directly or across the ops TensorRT moves a
// DequantizeLinear over (Reshape, Transpose, MaxPool, Slice, Concat...). Otherwise the layer runs
// in FP16 when its float inputs are float16 (the types written in the ONNX, as TensorRT 10's
// strong typing and TensorRT 11 read them) and in FP32 else. A Cast between the
// DequantizeLinear and the layer (DQ -> Cast(float16) -> Conv) stops the fusion: the layer runs
// in float on the Cast's type. See docs/tensorrt.md.
//
// This is the one classifier of layer precisions: inspect, check-trt, verify's reports,
// sensitivity and mixed-precision all read it (PrecisionReport.h adds shapes and totals).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/analysis/TensorInfo.h"
#include "qopt/ir/Graph.h"

namespace qopt::analysis {

/// Fp8: both inputs dequantized from float8 E4M3FN, the FP8 type TensorRT's ONNX parser takes.
enum class Precision { Int8, Fp16, Fp32, Fp8 };

/// "INT8", "FP16", "FP32", "FP8".
std::string_view precisionName(Precision precision);

/// A layer input that reaches it through DequantizeLinear.
struct DequantizedInput {
  const Node* dequantize = nullptr;
  /// The element type DequantizeLinear reads (INT8, UINT8, INT4, INT32, FLOAT8E4M3FN...).
  DataType quantizedType = DataType::Undefined;
  /// The quantized data is a constant (a stored weight), not a run-time tensor.
  bool constantData = false;
  /// DequantizeLinear reads the output of a QuantizeLinear (a simulated activation quantization).
  const Node* quantize = nullptr;
  /// Scales: how many (1 = per tensor), along which axis, and their range when constant.
  int64_t scaleCount = 1;
  int64_t axis = 1;
  std::optional<double> minScale;
  std::optional<double> maxScale;
  /// Every zero point is 0 (or absent); nullopt when the zero point is not a constant.
  std::optional<bool> zeroPointsZero;
  /// The ops crossed between DequantizeLinear and the layer (TensorRT moves DQ over them).
  std::vector<const Node*> crossed;
  /// A Cast between DequantizeLinear and the layer (only from findDequantizedInputAcrossCasts):
  /// TensorRT does not fuse the DequantizeLinear into the layer across it.
  const Node* cast = nullptr;

  bool perChannel() const { return scaleCount > 1; }
  /// 8-bit or narrower integers: what TensorRT runs as INT8 (INT4 weights included).
  bool isInteger8OrNarrower() const;
  /// Float8 E4M3FN: what TensorRT runs as FP8 (its parser takes no other float8 type).
  bool isFloat8E4M3() const { return quantizedType == DataType::Float8E4M3FN; }
};

/// How `value` reaches its reader: through DequantizeLinear (looking through ops TensorRT
/// moves DequantizeLinear across; Concat only when every input is dequantized), or nullopt.
std::optional<DequantizedInput> findDequantizedInput(const Value* value);

/// findDequantizedInput, also looking through Cast nodes (to-fp16 writes DQ -> Cast -> layer);
/// `cast` names the Cast nearest the DequantizeLinear when one was crossed.
std::optional<DequantizedInput> findDequantizedInputAcrossCasts(const Value* value);

/// Reshape, Transpose, MaxPool, Slice, Concat...: the ops TensorRT moves DequantizeLinear
/// forward across (and QuantizeLinear backward), as they commute with quantization.
bool commutesWithQuantization(const Node& node);

/// Conv, ConvTranspose, Gemm, MatMul and their integer forms (QLinearConv, QLinearMatMul,
/// ConvInteger, MatMulInteger): the ops whose cost is multiply-accumulates.
bool isComputeOp(const Node& node);

/// Conv, ConvTranspose, Gemm, MatMul: the float compute ops that TensorRT runs in INT8 when
/// their inputs come through DequantizeLinear.
bool isWeightedOp(const Node& node);
/// LSTM, GRU, RNN: compute layers without a quantized form; inspect lists them in float.
bool isRecurrentOp(const Node& node);

/// The input index holding the weight, or nullopt (MatMul whose second input is not constant).
std::optional<size_t> weightInputIndex(const Node& node);

/// Whether `value` is fixed at build time: an initializer (not a graph input), a Constant
/// node's output, or computed from such values only by QuantizeLinear, DequantizeLinear, Cast,
/// Transpose, Reshape, Identity, Unsqueeze or Squeeze.
bool isBuildTimeConstant(const Value* value);

struct LayerInfo {
  const Node* node = nullptr;
  Precision precision = Precision::Fp32;
  /// Why it runs in this precision (for float layers: what keeps it out of INT8).
  std::string reason;
  std::optional<DequantizedInput> activation;  // the data input (input 0)
  std::optional<DequantizedInput> weight;      // the weight (or MatMul's second activation)
  const Value* weightValue = nullptr;
  /// The stored weight's element type: the quantized type behind DequantizeLinear, else the
  /// weight's own type (Undefined when there is no weight).
  DataType weightType = DataType::Undefined;
  /// Multiply-accumulates of one run of the model, when the shapes are known (inside a Loop
  /// or Scan body: of all its iterations).
  std::optional<uint64_t> macs;
  /// Inside a body: how often it ran in the run inspected (0: an If branch not taken).
  std::optional<uint64_t> runs;
  /// TensorRT caveats of the quantization as written (uint8, non-zero zero points...).
  std::vector<std::string> notes;
  /// INT4 weight-only: a float input and a blocked int4/uint4 DequantizeLinear weight (TensorRT
  /// 10's weight-only GEMM); `precision` is the float type it computes in.
  bool weightOnly = false;
};

/// Classifies one compute node (isComputeOp) with the types and shapes of `info`.
LayerInfo classifyLayer(const Node& node, const TensorInfoMap& info);

/// Every compute node of the graph and of its bodies, in Graph::allNodes() order.
std::vector<LayerInfo> classifyLayers(const Graph& graph, const TensorInfoMap& info);

/// Multiply-accumulates of a compute node, or nullopt when a needed shape is unknown.
std::optional<uint64_t> countMacs(const Node& node, const TensorInfoMap& info);

/// "conv1" or, for an unnamed node, its first output's name: how reports name layers.
std::string layerName(const Node& node);

}  // namespace qopt::analysis
