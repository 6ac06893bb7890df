// insert-qdq's GPTQ weight rounding: equal to round to nearest where the inputs are
// uncorrelated, ahead of it where they are correlated, codes on the int8 grid at the scales round
// to nearest chose; the im2col Gram matrix of a strided, padded, grouped Conv equal to one built
// by hand; and through the pass, a depthwise layer whose kernel a centre dominates (a
// re-parameterized identity branch) reading a smooth image keeps far less output error.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "Placement.h"
#include "RescaleTestSupport.h"
#include "WeightRounding.h"
#include "qopt/qdq/QuantNumbers.h"

namespace qopt::testing {
namespace {

using qdq::gptqColumns;
using qdq::outputError;
using Samples = std::vector<std::map<std::string, interp::Array>>;

std::vector<double> normals(size_t count, std::mt19937& rng, double sigma = 1.0) {
  std::normal_distribution<double> normal(0.0, sigma);
  std::vector<double> v(count);
  for (double& x : v) x = normal(rng);
  return v;
}

// X^T X of `rows` rows of k values mixed from `factors` shared sources plus a little noise.
std::vector<double> correlatedGram(int64_t rows, int64_t k, int64_t factors, std::mt19937& rng) {
  const std::vector<double> mix = normals(static_cast<size_t>(factors * k), rng);
  std::vector<double> h(static_cast<size_t>(k * k), 0.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(x.begin(), x.end(), 0.0);
    for (int64_t f = 0; f < factors; ++f) {
      const double z = normal(rng);
      for (int64_t c = 0; c < k; ++c) x[c] += z * mix[static_cast<size_t>(f * k + c)];
    }
    for (double& v : x) v += 0.05 * normal(rng);
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < k; ++j) h[static_cast<size_t>(i * k + j)] += x[i] * x[j];
    }
  }
  return h;
}

std::vector<double> columnScales(const std::vector<double>& w, int64_t k, int64_t n) {
  std::vector<double> scales(static_cast<size_t>(n), 0.0);
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      scales[c] = std::max(scales[c], std::abs(w[static_cast<size_t>(r * n + c)]) / 127.0);
    }
  }
  return scales;
}

std::vector<double> nearest(const std::vector<double>& w, const std::vector<double>& scales,
                            int64_t n) {
  std::vector<double> q(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const double s = scales[i % static_cast<size_t>(n)];
    q[i] = qdq::nearestOnGrid(w[i] / s, DataType::Int8) * s;
  }
  return q;
}

std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

TEST(WeightRounding, GptqIsRoundToNearestWhenInputsAreUncorrelated) {
  std::mt19937 rng(3);
  const int64_t k = 40, n = 6;
  const std::vector<double> w = normals(static_cast<size_t>(k * n), rng);
  std::vector<double> h(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i) h[static_cast<size_t>(i * k + i)] = 1.0 + i;  // diagonal
  const std::vector<double> scales = columnScales(w, k, n);
  EXPECT_EQ(gptqColumns(w, k, n, h, scales, DataType::Int8), nearest(w, scales, n));
}

TEST(WeightRounding, GptqCutsTheOutputErrorOfCorrelatedInputsOnTheSameGrid) {
  std::mt19937 rng(5);
  const int64_t k = 64, n = 16;
  const std::vector<double> w = normals(static_cast<size_t>(k * n), rng);
  std::vector<double> h = correlatedGram(2000, k, 6, rng);
  const std::vector<double> given = h;
  const std::vector<double> scales = columnScales(w, k, n);
  const std::vector<double> q = gptqColumns(w, k, n, h, scales, DataType::Int8);
  ASSERT_EQ(q.size(), w.size());
  EXPECT_EQ(h, given);  // worked in h's storage (act order, the factor) and put it back
  for (size_t i = 0; i < q.size(); ++i) {
    const double units = q[i] / scales[i % static_cast<size_t>(n)];
    EXPECT_NEAR(units, std::round(units), 1e-9) << i;
    EXPECT_LE(std::abs(std::round(units)), 127.0) << i;
  }
  const double rtn = outputError(h, minus(nearest(w, scales, n), w), k, n);
  const double gptq = outputError(h, minus(q, w), k, n);
  EXPECT_GT(10 * std::log10(rtn / gptq), 6.0) << rtn << " vs " << gptq;
}

// x [1, 4, 7, 9] through a Conv of 2 groups, 3x3 kernel, stride 2, pads 1, dilation 1: H of each
// group by explicit im2col.
TEST(WeightRounding, ConvGramIsThatOfItsIm2colPatches) {
  std::mt19937 rng(9);
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, 4, 7, 9}));
  Value* y = addConv(g, x, "conv", {6, 2, 3, 3}, normals(6 * 2 * 9, rng), nullptr, 2, 1);
  y->producer()->setAttr(Attribute::makeInts("strides", {2, 2}));
  g.addOutput(y);
  const Samples samples = randomSampleSet(*model, 3, 40);
  PassContext context;
  context.data.calibData = writeSamples("weight_rounding_gram", samples);
  qdq::WeightSite site{y->producer(), 1, y->producer()->input(1), 0};
  const qdq::CapturedGrams captured = qdq::captureInputGrams(*model, {site}, context, 0);
  ASSERT_EQ(captured.samples, 3u);
  ASSERT_NE(captured.of(0), nullptr)
      << (captured.skipped.empty() ? "" : captured.skipped.begin()->second);
  const qdq::InputGram& gram = *captured.of(0);
  ASSERT_EQ(gram.k, 18);
  ASSERT_EQ(gram.grams.size(), 2u);
  const int64_t oh = 4, ow = 5;  // (7 + 2 - 3) / 2 + 1, (9 + 2 - 3) / 2 + 1
  EXPECT_EQ(gram.rows, 3 * oh * ow);
  for (int64_t group = 0; group < 2; ++group) {
    std::vector<double> want(18 * 18, 0.0);
    for (const auto& sample : samples) {
      const interp::Array& in = sample.at("x");
      for (int64_t py = 0; py < oh; ++py) {
        for (int64_t px = 0; px < ow; ++px) {
          std::vector<double> patch;
          for (int64_t c = 0; c < 2; ++c) {
            for (int64_t i = 0; i < 3; ++i) {
              for (int64_t j = 0; j < 3; ++j) {
                const int64_t yy = py * 2 - 1 + i, xx = px * 2 - 1 + j;
                const bool inside = yy >= 0 && yy < 7 && xx >= 0 && xx < 9;
                patch.push_back(inside ? in.getDouble(((group * 2 + c) * 7 + yy) * 9 + xx) : 0.0);
              }
            }
          }
          for (size_t a = 0; a < 18; ++a) {
            for (size_t b = 0; b < 18; ++b) want[a * 18 + b] += patch[a] * patch[b];
          }
        }
      }
    }
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(gram.grams[static_cast<size_t>(group)][i], want[i],
                  1e-9 * (1 + std::abs(want[i])))
          << "group " << group << " element " << i;
    }
  }
}

// A smooth image (neighbouring pixels nearly equal) with an offset, through a depthwise 3x3 whose
// kernels are an identity centre plus small neighbours. The pixels lie on the int8 grid of
// calibrator=max (multiples of 12.7 / 127), so the weights are the only error.
std::unique_ptr<Model> identityDepthwise(std::mt19937& rng) {
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {1, 16, 24, 24}));
  std::vector<double> w = normals(16 * 9, rng, 0.02);
  for (int64_t c = 0; c < 16; ++c) w[static_cast<size_t>(c * 9 + 4)] = 1.0 + 0.5 * c;
  Value* y = addConv(g, x, "dw", {16, 1, 3, 3}, w, nullptr, 16, 1);
  g.addOutput(y);
  return model;
}

Samples smoothImages(size_t count, std::mt19937& rng) {
  Samples samples;
  std::normal_distribution<double> normal(0.0, 1.0);
  for (size_t s = 0; s < count; ++s) {
    std::vector<double> v(16 * 24 * 24);
    for (int64_t c = 0; c < 16; ++c) {
      const double a = normal(rng), b = normal(rng), offset = 5.0 + normal(rng);
      for (int64_t i = 0; i < 24; ++i) {
        for (int64_t j = 0; j < 24; ++j) {
          const double value = offset + a * std::sin(0.2 * i + c) + b * std::cos(0.15 * j);
          v[static_cast<size_t>((c * 24 + i) * 24 + j)] =
              std::clamp(std::round(value * 10) / 10, 0.0, 12.7);
        }
      }
    }
    v[0] = 12.7;  // every sample reaches the calibrated max
    Tensor t = Tensor::fromDoubles(DataType::Float, {1, 16, 24, 24}, v);
    samples.push_back({{"x", interp::Array::fromTensor(t)}});
  }
  return samples;
}

TEST(WeightRounding, GptqKeepsAnIdentityDepthwiseLayerCloserToFloat) {
  std::mt19937 rng(21);
  auto reference = identityDepthwise(rng);
  const Samples calibration = smoothImages(8, rng);
  const Samples held = smoothImages(8, rng);
  const std::string calib = writeSamples("weight_rounding_dw", calibration);
  std::mt19937 same(21);
  auto nearestModel = identityDepthwise(same);
  same.seed(21);
  auto gptqModel = identityDepthwise(same);
  runWithData(*nearestModel, "insert-qdq{calibrator=max weight-rounding=nearest}", calib);
  PassOutcome outcome =
      runWithData(*gptqModel, "insert-qdq{calibrator=max weight-rounding=gptq}", calib);
  EXPECT_EQ(outcome.result.statistics.get("weights-gptq"), 1);
  const double plain = outputSqnr(*reference, *nearestModel, held);
  const double rounded = outputSqnr(*reference, *gptqModel, held);
  EXPECT_GT(rounded, plain + 5) << plain << " dB -> " << rounded << " dB";
}

TEST(WeightRounding, WithoutCalibrationDataWeightsRoundToNearest) {
  std::mt19937 rng(22);
  auto model = identityDepthwise(rng);
  PassOutcome outcome = runWithData(*model, "insert-qdq{calibrator=max weight-rounding=gptq}", "");
  const std::vector<std::string>& warnings = outcome.context->diagnostics().warnings();
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("weight-rounding=gptq needs the activations of --calib-data") !=
           std::string::npos;
  }));
  EXPECT_EQ(outcome.result.statistics.get("weights-gptq"), 0);
}

}  // namespace
}  // namespace qopt::testing

namespace qopt::testing {
namespace {

// x [rows, 64] -> MatMul [64, 32] -> Gemm transB=1 [16, 32]: both weights laid out the other way
// round from a Conv's.
std::unique_ptr<Model> denseModel(int64_t rows, std::mt19937& rng) {
  auto model = newModel(17);
  Graph& g = model->graph();
  Value* x = g.addInput("x", ValueType::tensor(DataType::Float, {rows, 64}));
  Value* w1 = addInitializer(g, "w1", DataType::Float, {64, 32}, normals(64 * 32, rng, 0.2));
  Value* h = addNode(g, "MatMul", {x, w1}, "h", ValueType::tensor(DataType::Float, {rows, 32}));
  Value* w2 = addInitializer(g, "w2", DataType::Float, {16, 32}, normals(16 * 32, rng, 0.2));
  Value* y = addNode(g, "Gemm", {h, w2}, "y", ValueType::tensor(DataType::Float, {rows, 16}));
  y->producer()->setAttr(Attribute::makeInt("transB", 1));
  g.addOutput(y);
  return model;
}

// Rows mixed from 4 sources: inputs as correlated as a trained network's.
Samples correlatedRows(size_t count, int64_t rows, std::mt19937& rng) {
  const std::vector<double> mix = normals(4 * 64, rng);
  std::normal_distribution<double> normal(0.0, 1.0);
  Samples samples;
  for (size_t s = 0; s < count; ++s) {
    std::vector<double> v(static_cast<size_t>(rows * 64), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t f = 0; f < 4; ++f) {
        const double z = normal(rng);
        for (int64_t c = 0; c < 64; ++c) v[static_cast<size_t>(r * 64 + c)] += z * mix[f * 64 + c];
      }
    }
    Tensor t = Tensor::fromDoubles(DataType::Float, {rows, 64}, v);
    samples.push_back({{"x", interp::Array::fromTensor(t)}});
  }
  return samples;
}

// The weight `quantized` dequantizes for the node computing `output` (input 1), as a flat list.
std::vector<double> dequantizedWeightOf(const Model& quantized, const std::string& output) {
  const Value* dq = quantized.graph().findValue(output)->producer()->input(1);
  const Node* node = dq->producer();
  EXPECT_EQ(node->opType(), "DequantizeLinear");
  std::vector<double> codes = node->input(0)->initializer()->toDoubles();
  std::vector<double> scales = node->input(1)->initializer()->toDoubles();
  const int64_t axis = node->attrInt("axis", 1);
  const std::vector<int64_t> dims = node->input(0)->initializer()->dims();
  const int64_t inner = axis == 0 ? dims[1] : 1;
  for (size_t i = 0; i < codes.size(); ++i) {
    codes[i] *= scales[(i / static_cast<size_t>(inner)) % scales.size()];
  }
  return codes;
}

// sum over the calibration samples of |(W_q - W) x|^2 for the layer computing `output`, its
// float input taken from the reference model.
double layerError(const Model& reference, const Model& quantized, const std::string& output,
                  const std::vector<double>& w, const Samples& samples) {
  const std::vector<double> wq = dequantizedWeightOf(quantized, output);
  std::vector<double> d(w.size());
  for (size_t i = 0; i < w.size(); ++i) d[i] = wq[i] - w[i];
  const bool gemm = output == "y";  // [16, 32] transB; else [64, 32]
  const int64_t k = gemm ? 32 : 64, n = gemm ? 16 : 32;
  double error = 0;
  for (const auto& sample : samples) {
    const interp::Array& in = sample.at("x");
    std::vector<double> x(static_cast<size_t>(in.numel()));
    for (int64_t i = 0; i < in.numel(); ++i) x[static_cast<size_t>(i)] = in.getDouble(i);
    if (gemm) {  // h = x w1, float
      const std::vector<double> w1 = initializerValues(reference, "w1");
      std::vector<double> h(x.size() / 64 * 32, 0.0);
      for (size_t r = 0; r < x.size() / 64; ++r) {
        for (int64_t c = 0; c < 32; ++c) {
          for (int64_t i = 0; i < 64; ++i) h[r * 32 + c] += x[r * 64 + i] * w1[i * 32 + c];
        }
      }
      x = std::move(h);
    }
    for (size_t r = 0; r < x.size() / static_cast<size_t>(k); ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double e = 0;
        for (int64_t i = 0; i < k; ++i) {
          e += x[r * k + i] * (gemm ? d[c * k + i] : d[i * n + c]);
        }
        error += e * e;
      }
    }
  }
  return error;
}

TEST(WeightRounding, MatMulAndTransposedGemmWeightsAreRounded) {
  std::mt19937 rng(31);
  auto reference = denseModel(32, rng);
  const Samples calibration = correlatedRows(16, 32, rng);  // 512 rows for K = 64 and 32
  const Samples held = correlatedRows(8, 32, rng);
  const std::string calib = writeSamples("weight_rounding_dense", calibration);
  std::mt19937 same(31);
  auto nearestModel = denseModel(32, same);
  same.seed(31);
  auto gptqModel = denseModel(32, same);
  runWithData(*nearestModel, "insert-qdq{calibrator=max min-channels=0}", calib);
  PassOutcome outcome = runWithData(
      *gptqModel, "insert-qdq{calibrator=max min-channels=0 weight-rounding=gptq}", calib);
  EXPECT_EQ(outcome.result.statistics.get("weights-gptq"), 2);
  // Each layer's own error on the calibration inputs, weights alone: what GPTQ minimises. A
  // weight read in the wrong layout gains nothing here.
  for (const char* layer : {"h", "y"}) {
    const std::string weight = std::string(layer) == "h" ? "w1" : "w2";
    const std::vector<double> w = initializerValues(*reference, weight);
    const double plain = layerError(*reference, *nearestModel, layer, w, calibration);
    const double rounded = layerError(*reference, *gptqModel, layer, w, calibration);
    EXPECT_GT(10 * std::log10(plain / rounded), 3.0) << layer << ": " << plain << " -> " << rounded;
  }
  const double plain = outputSqnr(*reference, *nearestModel, held);
  const double rounded = outputSqnr(*reference, *gptqModel, held);
  EXPECT_GT(rounded, plain - 0.5) << plain << " dB -> " << rounded << " dB";
}

TEST(WeightRounding, TooFewCalibrationRowsKeepRoundToNearest) {
  std::mt19937 rng(32);
  auto model = denseModel(4, rng);
  const std::string calib = writeSamples("weight_rounding_few", correlatedRows(2, 4, rng));
  PassOutcome outcome =
      runWithData(*model, "insert-qdq{calibrator=max min-channels=0 weight-rounding=gptq}", calib);
  EXPECT_EQ(outcome.result.statistics.get("weights-gptq"), 0);
  EXPECT_TRUE(std::any_of(outcome.result.remarks.begin(), outcome.result.remarks.end(),
                          [](const Remark& r) {
                            return r.kind == Remark::Kind::Missed &&
                                   r.message.find(
                                       "8 calibration rows for 64 inputs: GPTQ needs 4 "
                                       "per input") != std::string::npos;
                          }));
}

}  // namespace
}  // namespace qopt::testing

namespace qopt::testing {
namespace {

// weight-rounding=auto: GPTQ for FP8 (3 mantissa bits), round to nearest for INT8; without
// calibration data neither warns.
TEST(WeightRounding, AutoRoundsFp8WeightsByGptqAndInt8ToNearest) {
  std::mt19937 rng(23);
  const std::string calib = writeSamples("weight_rounding_auto", correlatedRows(16, 32, rng));
  for (const auto& [precision, expected] : {std::pair{"fp8", 2}, std::pair{"int8", 0}}) {
    const std::string pipeline =
        fmt::format("insert-qdq{{calibrator=max min-channels=0 precision={}}}", precision);
    std::mt19937 same(23);
    auto model = denseModel(32, same);
    PassOutcome outcome = runWithData(*model, pipeline, calib);
    EXPECT_EQ(outcome.result.statistics.get("weights-gptq"), expected) << precision;
    same.seed(23);
    auto bare = denseModel(32, same);
    PassOutcome noData = runWithData(*bare, pipeline, "");
    for (const std::string& w : noData.context->diagnostics().warnings()) {
      EXPECT_EQ(w.find("weight-rounding"), std::string::npos) << precision << ": " << w;
    }
  }
}

}  // namespace
}  // namespace qopt::testing
