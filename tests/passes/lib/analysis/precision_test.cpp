#include "qopt/analysis/Precision.h"

#include <gtest/gtest.h>

#include "AnalysisTestUtil.h"

namespace qopt::analysis {
namespace {

using testing::parse;
using testing::producerOf;

// x -> Q/DQ (int8) -> Conv with a per-channel int8 weight: INT8. The same activation through
// MaxPool and Reshape into a MatMul with a per-tensor weight: INT8 too (TensorRT moves DQ across
// them). A Gemm on the raw input: FP32. A MatMul on float16 inputs: FP16. A weight-only MatMul:
// FP32. A Conv on uint8 data with a non-zero zero point: INT8 with notes.
constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x, float[1,8] f) => (float[1,4,4,4] conv, float[1,4] mm, float[1,4] gemm,
                                       float16[1,4] half, float[1,4] wonly, float[1,4,4,4] u8)
<int8[4,2,1,1] wq = {1, -2, 3, 4, 5, 6, -7, 8}, float[4] ws = {0.01, 0.02, 0.03, 0.04},
 int8[4] wz = {0, 0, 0, 0}, float xs = {0.05}, int8 xz = {0},
 int8[8,4] mq = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,
                 1, 2, 3, 4, 5, 6, 7, 8},
 float ms = {0.1}, int8 mz = {0},
 float[4,8] gw = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,
                  1, 2, 3, 4, 5, 6, 7, 8},
 float[8,4] hw = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,
                  1, 2, 3, 4, 5, 6, 7, 8},
 uint8 uz = {128}, int64[2] flat = {1, 8}>
{
  xq = QuantizeLinear(x, xs, xz)
  xd = DequantizeLinear(xq, xs, xz)
  wd = DequantizeLinear <axis = 0> (wq, ws, wz)
  conv = Conv <kernel_shape = [1, 1]> (xd, wd)
  pooled = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (xd)
  r = Reshape(pooled, flat)
  md = DequantizeLinear(mq, ms, mz)
  mm = MatMul(r, md)
  gemm = Gemm <transB = 1> (f, gw)
  f16 = Cast <to = 10> (f)
  hw16 = Cast <to = 10> (hw)
  half = MatMul(f16, hw16)
  wonly = MatMul(f, md)
  uq = QuantizeLinear(x, xs, uz)
  ud = DequantizeLinear(uq, xs, uz)
  u8 = Conv <kernel_shape = [1, 1]> (ud, wd)
}
)";

class PrecisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = parse(kModel);
    std::string failure;
    info_ = observeTensorInfo(model_->graph(),
                              randomSamples(inputSpecs(model_->graph()), 1, 0)[0].inputs, &failure);
    EXPECT_EQ(failure, "");
    layers_ = classifyLayers(model_->graph(), info_);
  }
  const LayerInfo& layer(std::string_view output) {
    for (const LayerInfo& l : layers_) {
      if (l.node->output(0)->name() == output) return l;
    }
    ADD_FAILURE() << "no layer " << output;
    return layers_.front();
  }
  std::unique_ptr<Model> model_;
  TensorInfoMap info_;  // observed by running the model
  std::vector<LayerInfo> layers_;
};

TEST_F(PrecisionTest, ListsComputeLayersInGraphOrder) {
  ASSERT_EQ(layers_.size(), 6u);
  // Conv: 64 outputs x 2; MatMul [1,8] x [8,4]: 4 outputs x 8.
  EXPECT_EQ(layers_[0].macs, 128u);
  EXPECT_EQ(layers_[1].macs, 32u);
  EXPECT_EQ(layers_[0].node->output(0)->name(), "conv");
  EXPECT_EQ(layers_[5].node->output(0)->name(), "u8");
}

TEST_F(PrecisionTest, ConvWithQdqInputAndPerChannelWeightIsInt8) {
  const LayerInfo& l = layer("conv");
  EXPECT_EQ(l.precision, Precision::Int8);
  EXPECT_EQ(l.weightType, DataType::Int8);
  ASSERT_TRUE(l.weight && l.activation);
  EXPECT_TRUE(l.weight->perChannel());
  EXPECT_EQ(l.weight->axis, 0);
  EXPECT_EQ(l.weight->scaleCount, 4);
  EXPECT_DOUBLE_EQ(*l.weight->minScale, 0.01f);
  EXPECT_DOUBLE_EQ(*l.weight->maxScale, 0.04f);
  EXPECT_TRUE(l.weight->constantData);
  EXPECT_FALSE(l.activation->constantData);
  EXPECT_NE(l.activation->quantize, nullptr);
  EXPECT_TRUE(l.notes.empty());
}

TEST_F(PrecisionTest, DequantizeIsFoundAcrossCommutingOps) {
  const LayerInfo& l = layer("mm");
  EXPECT_EQ(l.precision, Precision::Int8);
  ASSERT_TRUE(l.activation.has_value());
  ASSERT_EQ(l.activation->crossed.size(), 2u);
  EXPECT_EQ(l.activation->crossed[0]->opType(), "MaxPool");
  EXPECT_EQ(l.activation->crossed[1]->opType(), "Reshape");
  EXPECT_FALSE(l.weight->perChannel());
}

TEST_F(PrecisionTest, FloatLayersSayWhy) {
  const LayerInfo& gemm = layer("gemm");
  EXPECT_EQ(gemm.precision, Precision::Fp32);
  EXPECT_EQ(gemm.weightType, DataType::Float);
  EXPECT_NE(gemm.reason.find("not quantized"), std::string::npos);

  const LayerInfo& weightOnly = layer("wonly");
  EXPECT_EQ(weightOnly.precision, Precision::Fp32);
  EXPECT_EQ(weightOnly.weightType, DataType::Int8);
  EXPECT_NE(weightOnly.reason.find("input 'f' does not come through DequantizeLinear"),
            std::string::npos);
  EXPECT_NE(weightOnly.reason.find("weight quantized only"), std::string::npos);
}

TEST_F(PrecisionTest, Float16InputsRunInFp16) {
  const LayerInfo& l = layer("half");
  EXPECT_EQ(l.precision, Precision::Fp16);
  EXPECT_TRUE(isBuildTimeConstant(l.weightValue));  // Cast of an initializer
}

TEST_F(PrecisionTest, Uint8WithZeroPointGetsTensorRtNotes) {
  const LayerInfo& l = layer("u8");
  EXPECT_EQ(l.precision, Precision::Int8);
  ASSERT_EQ(l.notes.size(), 2u);
  EXPECT_NE(l.notes[0].find("UINT8"), std::string::npos);
  EXPECT_NE(l.notes[1].find("non-zero zero point"), std::string::npos);
}

TEST_F(PrecisionTest, MacsFromObservedShapes) {
  TensorInfoMap observed;
  const Graph& g = model_->graph();
  observed.record(g.findValue("conv"), {DataType::Float, std::vector<int64_t>{1, 4, 4, 4}});
  observed.record(g.findValue("wd"), {DataType::Float, std::vector<int64_t>{4, 2, 1, 1}});
  observed.record(g.findValue("f"), {DataType::Float, std::vector<int64_t>{1, 8}});
  observed.record(g.findValue("gemm"), {DataType::Float, std::vector<int64_t>{1, 4}});
  // Conv: 64 outputs x (2 x 1 x 1); Gemm: 4 outputs x K = 8.
  EXPECT_EQ(countMacs(*producerOf(g, "conv"), observed), 128u);
  EXPECT_EQ(countMacs(*producerOf(g, "gemm"), observed), 32u);
  // MatMul needs the shape of its first input, unknown here (declared types say nothing).
  EXPECT_FALSE(countMacs(*producerOf(g, "mm"), observed).has_value());
}

// What to-fp16 writes after insert-qdq: DequantizeLinear -> Cast(float16) -> Conv on both inputs.
// TensorRT cannot fuse the DequantizeLinear across the Cast: FP16, with the nodes named; the same
// with declared types only (the Cast outputs declare nothing), so every caller agrees.
TEST(PrecisionCastTest, CastBetweenDequantizeAndLayerRunsInFp16) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x) => (float16[1,4,4,4] y)
<int8[4,2,1,1] wq = {1, -2, 3, 4, 5, 6, -7, 8}, float[4] ws = {0.01, 0.02, 0.03, 0.04},
 float xs = {0.05}, int8 xz = {0}>
{
  xq = QuantizeLinear(x, xs, xz)
  xd = DequantizeLinear(xq, xs, xz)
  xh = Cast <to = 10> (xd)
  wd = DequantizeLinear <axis = 0> (wq, ws)
  wh = Cast <to = 10> (wd)
  y = Conv <kernel_shape = [1, 1]> (xh, wh)
}
)");
  const Graph& g = model->graph();
  std::string failure;
  const TensorInfoMap observed =
      observeTensorInfo(g, randomSamples(inputSpecs(g), 1, 0)[0].inputs, &failure);
  ASSERT_EQ(failure, "");
  const TensorInfoMap declared;
  for (const TensorInfoMap* info : {&observed, &declared}) {
    LayerInfo l = classifyLayer(*producerOf(g, "y"), *info);
    EXPECT_EQ(l.precision, Precision::Fp16);
    EXPECT_EQ(l.reason,
              "'xh' comes through DequantizeLinear 'xd' and then Cast 'xh' to FLOAT16: TensorRT "
              "does not fuse a DequantizeLinear into the layer across a Cast, so the layer runs "
              "in float; float16 inputs");
    ASSERT_TRUE(l.activation && l.weight);
    EXPECT_EQ(l.activation->cast, producerOf(g, "xh"));
    EXPECT_EQ(l.weight->cast, producerOf(g, "wh"));
    EXPECT_EQ(l.weightType, DataType::Int8);  // what the file stores
  }
  // Callers that bypass Q/DQ (sensitivity) still see no DequantizeLinear right before the layer.
  EXPECT_FALSE(findDequantizedInput(g.findValue("xh")).has_value());
  EXPECT_TRUE(findDequantizedInputAcrossCasts(g.findValue("xh")).has_value());
}

TEST(PrecisionNamesTest, Names) {
  EXPECT_EQ(precisionName(Precision::Int8), "INT8");
  EXPECT_EQ(precisionName(Precision::Fp16), "FP16");
  EXPECT_EQ(precisionName(Precision::Fp32), "FP32");
}

TEST(PrecisionQOperatorTest, IntegerOperatorsAreInt8AndConvTransposeMacs) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (uint8[1,2,3,3] x, float[1,2,3,3] f) => (uint8[1,2,3,3] y, float[1,1,5,5] t)
<float s = {0.1}, uint8 z = {0}, int8[2,2,1,1] w = {1, 2, 3, 4}, float ws = {0.2}, int8 wz = {0},
 float[2,1,3,3] tw = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}>
{
  y = QLinearConv(x, s, z, w, ws, wz, s, z)
  t = ConvTranspose(f, tw)
}
)");
  TensorInfoMap info;
  const Graph& g = model->graph();
  info.record(g.findValue("y"), {DataType::UInt8, std::vector<int64_t>{1, 2, 3, 3}});
  std::vector<LayerInfo> layers = classifyLayers(g, info);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].precision, Precision::Int8);
  EXPECT_EQ(layers[0].weightType, DataType::Int8);
  EXPECT_NE(layers[0].notes[0].find("QOperator"), std::string::npos);
  // QLinearConv: 18 outputs x (2 x 1 x 1). ConvTranspose: 18 inputs x (1 x 3 x 3).
  EXPECT_EQ(layers[0].macs, 36u);
  EXPECT_EQ(layers[1].macs, 162u);
  EXPECT_EQ(layers[1].precision, Precision::Fp32);
  EXPECT_EQ(layerName(*layers[1].node), "t");
}

}  // namespace
}  // namespace qopt::analysis
