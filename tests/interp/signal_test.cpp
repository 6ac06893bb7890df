// The signal kernels beyond ONNX's node tests: the transform against a naive DFT at every kind of
// length, inverse round trips, odd and padded lengths, onesided output, opset 20's axis input,
// periodic and symmetric windows, the mel filter bank's triangles, and the errors for inputs and
// attributes the specification rules out.
#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "InterpTestUtil.h"
#include "ops/Fft.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

std::function<void(Node&)> intAttrs(std::vector<std::pair<std::string, int64_t>> values) {
  return [=](Node& n) {
    for (const auto& [name, v] : values) n.setAttr(Attribute::makeInt(name, v));
  };
}

/// Expects `actual` to hold `expected` (re, im pairs or plain values) within `tolerance`.
void expectNear(const Array& actual, const std::vector<double>& expected, double tolerance) {
  std::vector<double> got = doubles(actual);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], tolerance) << "element " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// The transform

std::vector<Complex> naiveDft(const std::vector<Complex>& x, bool inverse) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<Complex> out(x.size());
  for (int64_t k = 0; k < n; ++k) {
    std::complex<long double> sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      // (j k) mod n keeps the angle exact before the trigonometry.
      long double angle = (inverse ? 2 : -2) * std::acos(-1.0L) *
                          static_cast<long double>((j * k) % n) / static_cast<long double>(n);
      sum += std::complex<long double>(x[static_cast<size_t>(j)]) *
             std::complex<long double>(std::cos(angle), std::sin(angle));
    }
    out[static_cast<size_t>(k)] =
        Complex(static_cast<double>(sum.real()), static_cast<double>(sum.imag()));
  }
  return out;
}

TEST(Fft, MatchesNaiveDftForPowerOfTwoAndOtherLengths) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 40; ++n) lengths.push_back(n);
  for (int64_t n : {64, 97, 100, 127, 128, 243, 256, 1000}) lengths.push_back(n);
  for (int64_t n : lengths) {
    for (bool inverse : {false, true}) {
      std::vector<Complex> x(static_cast<size_t>(n));
      double magnitude = 0;
      for (Complex& v : x) {
        v = Complex(dist(rng), dist(rng));
        magnitude += std::abs(v);
      }
      std::vector<Complex> expected = naiveDft(x, inverse);
      Fft plan(n, inverse);
      ComplexBuffer work(plan.workSize());
      std::vector<Complex> y = x;
      plan.run(y.data(), work.data());
      double worst = 0;
      for (size_t k = 0; k < y.size(); ++k) worst = std::max(worst, std::abs(y[k] - expected[k]));
      EXPECT_LT(worst, 1e-13 * magnitude) << "length " << n << (inverse ? " inverse" : "");
    }
  }
}

TEST(Fft, RejectsAnEmptyLength) {
  EXPECT_NE(errorMessage([] { Fft plan(0, false); }).find("at least 1"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// DFT

TEST(Dft, InverseUndoesForwardAtOddLengths) {
  for (int64_t n : {1, 3, 7, 15}) {
    Array x = randomFloats({2, n, 2}, static_cast<uint32_t>(n));
    Array spectrum = runOne("DFT", {x});
    Array back = runOne("DFT", {spectrum}, intAttrs({{"inverse", 1}}));
    ASSERT_EQ(back.shape(), x.shape());
    expectNear(back, doubles(x), 1e-5);
  }
}

TEST(Dft, RealInputInverseRoundTripHasZeroImaginaryPart) {
  Array x = floats({1, 5, 1}, {1, -2, 3, 0.5f, 4});
  Array back = runOne("DFT", {runOne("DFT", {x})}, intAttrs({{"inverse", 1}}));
  expectNear(back, {1, 0, -2, 0, 3, 0, 0.5, 0, 4, 0}, 1e-5);
}

TEST(Dft, OnesidedKeepsHalfPlusOneBinsAtOddAndEvenLengths) {
  Array odd = runOne("DFT", {floats({1, 5, 1}, {1, 2, 3, 4, 5})}, intAttrs({{"onesided", 1}}));
  EXPECT_EQ(odd.shape(), (Shape{1, 3, 2}));
  expectNear(odd, {15, 0, -2.5, 3.4409548, -2.5, 0.8122992}, 1e-5);
  Array even = runOne("DFT", {floats({1, 4, 1}, {1, 2, 3, 4})}, intAttrs({{"onesided", 1}}));
  EXPECT_EQ(even.shape(), (Shape{1, 3, 2}));
  expectNear(even, {10, 0, -2, 2, -2, 0}, 1e-5);
}

TEST(Dft, DftLengthZeroPadsOrTruncates) {
  Array padded = runOne("DFT", {floats({1, 3, 1}, {1, 2, 3}), int64s({}, {4})});
  EXPECT_EQ(padded.shape(), (Shape{1, 4, 2}));
  expectNear(padded, {6, 0, -2, -2, 2, 0, -2, 2}, 1e-5);
  Array truncated = runOne("DFT", {floats({1, 5, 1}, {1, 2, 3, 4, 5}), int32s({}, {2})});
  EXPECT_EQ(truncated.shape(), (Shape{1, 2, 2}));
  expectNear(truncated, {3, 0, -1, 0}, 1e-5);
}

TEST(Dft, TransformsTheChosenAxisOnly) {
  Array x = floats({1, 2, 3, 1}, {1, 2, 3, 4, 5, 6});
  Array rows = runOne("DFT", {x}, intAttrs({{"axis", 2}}));
  EXPECT_EQ(rows.shape(), (Shape{1, 2, 3, 2}));
  expectNear(rows,
             {6, 0, -1.5, 0.8660254, -1.5, -0.8660254, 15, 0, -1.5, 0.8660254, -1.5, -0.8660254},
             1e-5);
  Array columns = runOne("DFT", {x});  // axis 1 by default in opset 17
  expectNear(columns, {5, 0, 7, 0, 9, 0, -3, 0, -3, 0, -3, 0}, 1e-5);
  Array negative = runOne("DFT", {x}, intAttrs({{"axis", -2}}));
  EXPECT_TRUE(bitwiseEqual(negative, rows));
}

TEST(Dft, Opset20TakesTheAxisAsAnInputDefaultingToTheLastSignalAxis) {
  Array x = floats({1, 2, 3, 1}, {1, 2, 3, 4, 5, 6});
  Array rows = runOne("DFT", {x}, intAttrs({{"axis", 2}}));
  EXPECT_TRUE(bitwiseEqual(runOne("DFT", {x}, {}, 20), rows));
  EXPECT_TRUE(bitwiseEqual(runOne("DFT", {x, Array(), int64s({}, {-2})}, {}, 20), rows));
  Array columns = runOne("DFT", {x}, intAttrs({{"axis", 1}}));
  EXPECT_TRUE(bitwiseEqual(runOne("DFT", {x, Array(), int64s({}, {1})}, {}, 20), columns));
  Array padded = runOne("DFT", {x, int64s({}, {4}), int64s({}, {2})}, {}, 20);
  EXPECT_EQ(padded.shape(), (Shape{1, 2, 4, 2}));
  expectNear(padded, {6, 0, -2, -2, 2, 0, -2, 2, 15, 0, -2, -5, 5, 0, -2, 5}, 1e-5);
}

TEST(Dft, DoubleAndFloat16KeepTheirType) {
  Array d = runOne("DFT", {makeArray<double>(DataType::Double, {1, 3, 1}, {1, 2, 3})});
  EXPECT_EQ(d.dataType(), DataType::Double);
  expectNear(d, {6, 0, -1.5, std::sqrt(3.0) / 2, -1.5, -std::sqrt(3.0) / 2}, 1e-14);
  Array h = runOne("DFT", {halves({1, 4, 1}, {1, 2, 3, 4})});
  EXPECT_EQ(h.dataType(), DataType::Float16);
  expectNear(h, {10, 0, -2, 2, -2, 0, -2, -2}, 0);
}

TEST(Dft, ManyThreadsGiveTheSameBits) {
  Array x = randomFloats({64, 301, 1}, 3);
  Array one = runOp("DFT", {x}, {}, 17, 1, 1).at(0);
  Array four = runOp("DFT", {x}, {}, 17, 1, 4).at(0);
  EXPECT_TRUE(bitwiseEqual(one, four));
}

TEST(Dft, RejectsWhatTheSpecificationRulesOut) {
  Array real = floats({1, 4, 1}, {1, 2, 3, 4});
  Array complex = floats({1, 2, 2}, {1, 2, 3, 4});
  auto error = [](const std::vector<Array>& inputs, std::function<void(Node&)> set = {},
                  int64_t opset = 17) {
    return errorMessage([&] { runOne("DFT", inputs, set, opset); });
  };
  EXPECT_NE(error({complex}, intAttrs({{"onesided", 1}})).find("needs a real input"),
            std::string::npos);
  EXPECT_NE(error({real}, intAttrs({{"onesided", 1}, {"inverse", 1}})).find("cannot both"),
            std::string::npos);
  EXPECT_NE(error({real}, intAttrs({{"inverse", 2}})).find("inverse must be 0 or 1"),
            std::string::npos);
  EXPECT_NE(error({real}, intAttrs({{"axis", 2}})).find("axis 2 is out of range"),
            std::string::npos);
  EXPECT_NE(error({real}, intAttrs({{"axis", -1}})).find("axis -1 is out of range"),
            std::string::npos);
  EXPECT_NE(error({real, int64s({}, {0})}).find("dft_length must be at least 1"),
            std::string::npos);
  EXPECT_NE(error({real, floats({}, {4})}).find("dft_length must be int32 or int64"),
            std::string::npos);
  EXPECT_NE(error({floats({1, 2, 3}, {1, 2, 3, 4, 5, 6})}).find("last dimension of 1"),
            std::string::npos);
  EXPECT_NE(error({int64s({1, 2, 1}, {1, 2})}).find("input must be float"), std::string::npos);
  EXPECT_NE(error({real}, intAttrs({{"axis", 1}}), 20).find("an input since opset 20"),
            std::string::npos);
  EXPECT_NE(error({real, Array(), int64s({}, {2})}, {}, 20).find("axis 2 is out of range"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// STFT

TEST(Stft, FramesAreStepApartAndOnesidedByDefault) {
  Array x = floats({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  Array y = runOne("STFT", {x, int64s({}, {2}), Array(), int64s({}, {4})});
  EXPECT_EQ(y.shape(), (Shape{1, 2, 3, 2}));
  expectNear(y, {10, 0, -2, 2, -2, 0, 18, 0, -2, 2, -2, 0}, 1e-5);
}

TEST(Stft, WindowWeightsEachFrame) {
  Array x = floats({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  Array y = runOne("STFT", {x, int64s({}, {2}), floats({4}, {0, 1, 1, 0}), int64s({}, {4})});
  // Frame 0 is [0, 2, 3, 0] after the window, frame 1 [0, 4, 5, 0].
  expectNear(y, {5, 0, -3, -2, 1, 0, 9, 0, -5, -4, 1, 0}, 1e-5);
}

TEST(Stft, ComplexSignalNeedsFullOutput) {
  Array x = floats({1, 4, 2}, {1, 0, 0, 1, -1, 0, 0, -1});  // e^{i pi n / 2}
  Array y =
      runOne("STFT", {x, int64s({}, {4}), Array(), int64s({}, {4})}, intAttrs({{"onesided", 0}}));
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 2}));
  expectNear(y, {0, 0, 4, 0, 0, 0, 0, 0}, 1e-5);
  EXPECT_NE(errorMessage([&] {
              runOne("STFT", {x, int64s({}, {4}), Array(), int64s({}, {4})});
            }).find("needs a real signal"),
            std::string::npos);
}

TEST(Stft, RejectsInconsistentFraming) {
  Array x = floats({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  auto error = [&](const std::vector<Array>& inputs) {
    return errorMessage([&] { runOne("STFT", inputs); });
  };
  EXPECT_NE(error({x, int64s({}, {2}), floats({3}, {1, 1, 1}), int64s({}, {4})})
                .find("differs from the window's length 3"),
            std::string::npos);
  EXPECT_NE(error({x, int64s({}, {2})}).find("a window or a frame_length is required"),
            std::string::npos);
  EXPECT_NE(error({x, int64s({}, {2}), Array(), int64s({}, {7})}).find("exceeds the signal length"),
            std::string::npos);
  EXPECT_NE(error({x, int64s({}, {0}), Array(), int64s({}, {4})}).find("frame_step must be"),
            std::string::npos);
  EXPECT_NE(error({x, int64s({}, {2}), makeArray<double>(DataType::Double, {2}, {1, 1})})
                .find("window has type DOUBLE"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Windows

TEST(Windows, PeriodicDividesBySizeSymmetricBySizeMinusOne) {
  expectNear(runOne("HannWindow", {int64s({}, {4})}), {0, 0.5, 1, 0.5}, 1e-7);
  expectNear(runOne("HannWindow", {int64s({}, {4})}, intAttrs({{"periodic", 0}})),
             {0, 0.75, 0.75, 0}, 1e-7);
  expectNear(runOne("HammingWindow", {int32s({}, {3})}, intAttrs({{"periodic", 0}})),
             {4.0 / 46, 1, 4.0 / 46}, 1e-7);
  expectNear(runOne("BlackmanWindow", {int32s({}, {3})}, intAttrs({{"periodic", 0}})), {0, 1, 0},
             1e-7);
  // A periodic window of size N is the symmetric one of size N + 1 without its last point.
  Array periodic = runOne("BlackmanWindow", {int64s({}, {9})});
  Array symmetric = runOne("BlackmanWindow", {int64s({}, {10})}, intAttrs({{"periodic", 0}}));
  std::vector<double> head = doubles(symmetric);
  head.pop_back();
  expectNear(periodic, head, 1e-7);
}

TEST(Windows, SizeOneAndOutputTypes) {
  expectNear(runOne("HammingWindow", {int64s({}, {1})}), {4.0 / 46}, 1e-7);
  Array d = runOne("HannWindow", {int64s({}, {3})},
                   intAttrs({{"output_datatype", static_cast<int64_t>(DataType::Double)}}));
  EXPECT_EQ(d.dataType(), DataType::Double);
  expectNear(d, {0, 0.75, 0.75}, 1e-15);
  Array i = runOne("HannWindow", {int64s({}, {4})},
                   intAttrs({{"output_datatype", static_cast<int64_t>(DataType::Int32)}}));
  EXPECT_EQ(i.dataType(), DataType::Int32);
  EXPECT_EQ(ints(i), (std::vector<int64_t>{0, 0, 1, 0}));  // truncated, as Cast does
  Array h = runOne("HannWindow", {int64s({}, {4})},
                   intAttrs({{"output_datatype", static_cast<int64_t>(DataType::Float16)}}));
  EXPECT_EQ(h.dataType(), DataType::Float16);
  expectNear(h, {0, 0.5, 1, 0.5}, 0);
}

TEST(Windows, RejectBadSizesAndAttributes) {
  auto error = [](const std::string& op, const Array& size, std::function<void(Node&)> set = {}) {
    return errorMessage([&] { runOne(op, {size}, set); });
  };
  EXPECT_NE(error("HannWindow", int64s({}, {0})).find("size must be at least 1"),
            std::string::npos);
  EXPECT_NE(error("HammingWindow", int64s({}, {1}), intAttrs({{"periodic", 0}}))
                .find("symmetric window needs a size of at least 2"),
            std::string::npos);
  EXPECT_NE(error("BlackmanWindow", int64s({}, {4}), intAttrs({{"periodic", 2}}))
                .find("periodic must be 0 or 1"),
            std::string::npos);
  EXPECT_NE(error("HannWindow", int64s({}, {4}),
                  intAttrs({{"output_datatype", static_cast<int64_t>(DataType::String)}}))
                .find("not a numeric tensor type"),
            std::string::npos);
  EXPECT_NE(error("HannWindow", floats({}, {4})).find("size must be int32 or int64"),
            std::string::npos);
  EXPECT_NE(error("HannWindow", int64s({2}, {4, 4})).find("size must be a scalar"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// MelWeightMatrix

std::vector<Array> melInputs(int64_t bins, int64_t dftLength, int64_t sampleRate, float lower,
                             float upper) {
  return {int64s({}, {bins}), int64s({}, {dftLength}), int64s({}, {sampleRate}),
          floats({}, {lower}), floats({}, {upper})};
}

TEST(MelWeightMatrix, OneWideTriangleRisesAndFallsLinearly) {
  // Points at 0, mel^-1(mel(15) / 3) and mel^-1(2 mel(15) / 3) Hz fall in bins 0, 5 and 10 of a
  // 32-point DFT at 32 Hz (33/32 bins per hertz).
  Array m = runOne("MelWeightMatrix", melInputs(1, 32, 32, 0, 15));
  EXPECT_EQ(m.shape(), (Shape{17, 1}));
  std::vector<double> expected(17, 0.0);
  for (int j = 0; j <= 5; ++j) expected[static_cast<size_t>(j)] = j / 5.0;
  for (int j = 5; j < 10; ++j) expected[static_cast<size_t>(j)] = (10 - j) / 5.0;
  expectNear(m, expected, 1e-7);
}

TEST(MelWeightMatrix, EveryBandPeaksAtOne) {
  Array m = runOne("MelWeightMatrix", melInputs(12, 256, 16000, 50, 7900),
                   intAttrs({{"output_datatype", static_cast<int64_t>(DataType::Double)}}));
  EXPECT_EQ(m.dataType(), DataType::Double);
  EXPECT_EQ(m.shape(), (Shape{129, 12}));
  std::vector<double> v = doubles(m);
  for (int64_t band = 0; band < 12; ++band) {
    double peak = 0;
    for (int64_t bin = 0; bin < 129; ++bin) peak = std::max(peak, v[bin * 12 + band]);
    EXPECT_EQ(peak, 1.0) << "band " << band;
  }
}

TEST(MelWeightMatrix, RejectsEdgesOutsideTheSpectrum) {
  auto error = [](const std::vector<Array>& inputs) {
    return errorMessage([&] { runOne("MelWeightMatrix", inputs); });
  };
  EXPECT_NE(error(melInputs(4, 16, 8000, 0, 8000)).find("past the last bin"), std::string::npos);
  EXPECT_NE(error(melInputs(4, 16, 8000, 3000, 2000)).find("lower_edge_hertz <= upper"),
            std::string::npos);
  EXPECT_NE(error(melInputs(4, 16, 8000, -1, 2000)).find("0 <= lower_edge_hertz"),
            std::string::npos);
  EXPECT_NE(error(melInputs(0, 16, 8000, 0, 2000)).find("num_mel_bins must be at least 1"),
            std::string::npos);
  EXPECT_NE(error(melInputs(4, 16, 0, 0, 2000)).find("sample_rate must be at least 1"),
            std::string::npos);
  std::vector<Array> wrongType = melInputs(4, 16, 8000, 0, 2000);
  wrongType[3] = int64s({}, {0});
  EXPECT_NE(error(wrongType).find("lower_edge_hertz must be float"), std::string::npos);
}

}  // namespace
}  // namespace qopt::interp
