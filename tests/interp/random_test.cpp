// The random ops: values in the distribution's range, of the requested type and shape, and the
// same for the same seed (and for no seed) on every run; bad attributes are errors. The
// generator is fixed, so the statistical checks below always see the same draws.
#include <cmath>
#include <numeric>

#include "InterpTestUtil.h"

namespace qopt::interp {
namespace {

using namespace qopt::interp::testing;

std::function<void(Node&)> withAttrs(std::optional<float> seed, std::optional<DataType> dtype,
                                     std::function<void(Node&)> more = {}) {
  return [=](Node& n) {
    if (seed) n.setAttr(Attribute::makeFloat("seed", *seed));
    if (dtype) n.setAttr(Attribute::makeInt("dtype", static_cast<int64_t>(*dtype)));
    if (more) more(n);
  };
}

Array bernoulli(const Array& p, std::optional<float> seed,
                std::optional<DataType> dtype = std::nullopt) {
  return runOne("Bernoulli", {p}, withAttrs(seed, dtype), 15);
}

Array filled(Shape shape, float value) {
  Array a(DataType::Float, std::move(shape));
  std::fill_n(a.data<float>(), a.numel(), value);
  return a;
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

TEST(Bernoulli, DrawsZeroOrOneOfTheInputsTypeAndShape) {
  Array p = randomFloats({4, 250}, 7, 0.0f, 1.0f);
  Array y = bernoulli(p, 3.0f);
  EXPECT_EQ(y.dataType(), DataType::Float);
  EXPECT_EQ(y.shape(), (Shape{4, 250}));
  for (double v : doubles(y)) EXPECT_TRUE(v == 0.0 || v == 1.0) << v;
}

TEST(Bernoulli, SameSeedSameDrawsOtherSeedOtherDraws) {
  Array p = filled({1000}, 0.5f);
  EXPECT_TRUE(bitwiseEqual(bernoulli(p, 1.0f), bernoulli(p, 1.0f)));
  EXPECT_FALSE(bitwiseEqual(bernoulli(p, 1.0f), bernoulli(p, 2.0f)));
  // No seed: a fixed default, so a model gives the same output on every run.
  EXPECT_TRUE(bitwiseEqual(bernoulli(p, std::nullopt), bernoulli(p, std::nullopt)));
}

TEST(Bernoulli, FollowsTheProbabilities) {
  EXPECT_EQ(mean(doubles(bernoulli(filled({100}, 0.0f), 5.0f))), 0.0);
  EXPECT_EQ(mean(doubles(bernoulli(filled({100}, 1.0f), 5.0f))), 1.0);
  double m = mean(doubles(bernoulli(filled({20000}, 0.3f), 5.0f)));
  EXPECT_NEAR(m, 0.3, 0.02);
}

TEST(Bernoulli, OutputTypes) {
  Array p = makeArray<double>(DataType::Double, {4}, {0, 1, 0, 1});
  Array b = bernoulli(p, 0.0f, DataType::Bool);
  EXPECT_EQ(b.dataType(), DataType::Bool);
  EXPECT_EQ(ints(b), (std::vector<int64_t>{0, 1, 0, 1}));
  Array i = bernoulli(p, 0.0f, DataType::Int32);
  EXPECT_EQ(i.dataType(), DataType::Int32);
  EXPECT_EQ(ints(i), (std::vector<int64_t>{0, 1, 0, 1}));
  Array h = bernoulli(halves({2}, {1, 0}), std::nullopt, DataType::Float16);
  EXPECT_EQ(h.dataType(), DataType::Float16);
  EXPECT_EQ(doubles(h), (std::vector<double>{1, 0}));
}

TEST(Bernoulli, BadInputsAreErrors) {
  std::string outside = errorMessage([] { bernoulli(floats({2}, {0.5f, 1.5f}), 0.0f); });
  EXPECT_NE(outside.find("probability 1.5 at element 1 is not in [0, 1]"), std::string::npos)
      << outside;
  EXPECT_NE(errorMessage([] { bernoulli(floats({1}, {NAN}), 0.0f); }).find("not in [0, 1]"),
            std::string::npos);
  EXPECT_NE(errorMessage([] { bernoulli(int64s({1}, {1}), 0.0f); }).find("must be float"),
            std::string::npos);
  EXPECT_NE(errorMessage([] {
              bernoulli(floats({1}, {0}), 0.0f, DataType::String);
            }).find("cannot hold 0 and 1"),
            std::string::npos);
}

std::function<void(Node&)> uniformAttrs(float low, float high, std::optional<float> seed,
                                        std::optional<DataType> dtype = std::nullopt,
                                        std::vector<int64_t> shape = {}) {
  return withAttrs(seed, dtype, [=](Node& n) {
    n.setAttr(Attribute::makeFloat("low", low));
    n.setAttr(Attribute::makeFloat("high", high));
    if (!shape.empty()) n.setAttr(Attribute::makeInts("shape", shape));
  });
}

TEST(RandomUniform, ShapeTypeRangeAndDeterminism) {
  auto draw = [](std::optional<float> seed, std::optional<DataType> dtype) {
    return runOne("RandomUniform", {}, uniformAttrs(-2, 3, seed, dtype, {50, 40}));
  };
  Array y = draw(11.0f, std::nullopt);
  EXPECT_EQ(y.dataType(), DataType::Float);
  EXPECT_EQ(y.shape(), (Shape{50, 40}));
  std::vector<double> v = doubles(y);
  for (double x : v) EXPECT_TRUE(x >= -2 && x <= 3) << x;
  EXPECT_NEAR(mean(v), 0.5, 0.1);
  EXPECT_TRUE(bitwiseEqual(y, draw(11.0f, std::nullopt)));
  EXPECT_FALSE(bitwiseEqual(y, draw(12.0f, std::nullopt)));
  EXPECT_TRUE(bitwiseEqual(draw(std::nullopt, std::nullopt), draw(std::nullopt, std::nullopt)));
  for (DataType t : {DataType::Double, DataType::Float16, DataType::BFloat16}) {
    Array other = draw(11.0f, t);
    EXPECT_EQ(other.dataType(), t);
    for (double x : doubles(other)) EXPECT_TRUE(x >= -2 && x <= 3) << x;
  }
}

TEST(RandomUniformLike, TakesTheInputsShapeAndType) {
  Array like = makeArray<double>(DataType::Double, {3, 7}, std::vector<double>(21, 0.0));
  Array y = runOne("RandomUniformLike", {like}, uniformAttrs(0, 1, 4.0f));
  EXPECT_EQ(y.dataType(), DataType::Double);
  EXPECT_EQ(y.shape(), (Shape{3, 7}));
  for (double x : doubles(y)) EXPECT_TRUE(x >= 0 && x < 1) << x;
  // An integer input needs dtype: it cannot hold the draws.
  Array ints = int64s({2}, {1, 2});
  Array f = runOne("RandomUniformLike", {ints}, uniformAttrs(0, 1, 4.0f, DataType::Float));
  EXPECT_EQ(f.dataType(), DataType::Float);
  EXPECT_EQ(f.shape(), (Shape{2}));
  std::string message =
      errorMessage([&] { runOne("RandomUniformLike", {ints}, uniformAttrs(0, 1, 4.0f)); });
  EXPECT_NE(message.find("got INT64 (the input's; set dtype)"), std::string::npos) << message;
}

TEST(RandomNormal, MomentsAndDeterminism) {
  auto attrs = [](std::optional<float> seed) {
    return withAttrs(seed, std::nullopt, [](Node& n) {
      n.setAttr(Attribute::makeFloat("mean", 2));
      n.setAttr(Attribute::makeFloat("scale", 0.5f));
      n.setAttr(Attribute::makeInts("shape", {20001}));  // odd: the last pair is cut short
    });
  };
  Array y = runOne("RandomNormal", {}, attrs(9.0f));
  EXPECT_EQ(y.shape(), (Shape{20001}));
  std::vector<double> v = doubles(y);
  double m = mean(v);
  double var = 0;
  for (double x : v) var += (x - m) * (x - m);
  var /= static_cast<double>(v.size());
  EXPECT_NEAR(m, 2.0, 0.02);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.02);
  EXPECT_TRUE(bitwiseEqual(y, runOne("RandomNormal", {}, attrs(9.0f))));

  Array like = runOne("RandomNormalLike", {halves({4}, {0, 0, 0, 0})}, withAttrs(1.0f, {}));
  EXPECT_EQ(like.dataType(), DataType::Float16);
  EXPECT_EQ(like.shape(), (Shape{4}));
  for (double x : doubles(like)) EXPECT_TRUE(std::isfinite(x));
}

TEST(RandomOps, BadAttributesAreErrors) {
  auto error = [](const std::string& op, std::function<void(Node&)> configure,
                  std::vector<Array> inputs = {}) {
    return errorMessage([&] { runOne(op, inputs, configure); });
  };
  EXPECT_NE(error("RandomUniform", uniformAttrs(1, 0, 0.0f, std::nullopt, {2}))
                .find("high 0 is less than low 1"),
            std::string::npos);
  EXPECT_NE(error("RandomUniform", uniformAttrs(0, 1, 0.0f)).find("'shape' is required"),
            std::string::npos);
  EXPECT_NE(error("RandomUniform", uniformAttrs(0, 1, 0.0f, std::nullopt, {2, -1}))
                .find("negative dimension"),
            std::string::npos);
  EXPECT_NE(error("RandomUniform", uniformAttrs(0, 1, 0.0f, DataType::Int32, {2}))
                .find("output type must be float"),
            std::string::npos);
  EXPECT_NE(error("RandomUniform", uniformAttrs(0, INFINITY, 0.0f, std::nullopt, {2}))
                .find("high must be finite"),
            std::string::npos);
  EXPECT_NE(error("RandomNormal",
                  [](Node& n) {
                    n.setAttr(Attribute::makeFloat("scale", -1));
                    n.setAttr(Attribute::makeInts("shape", {2}));
                  })
                .find("scale must not be negative"),
            std::string::npos);
  EXPECT_NE(error("RandomNormal",
                  [](Node& n) {
                    n.setAttr(Attribute::makeInt("seed", 3));
                    n.setAttr(Attribute::makeInts("shape", {2}));
                  })
                .find("seed must be a float"),
            std::string::npos);
  EXPECT_NE(error("RandomNormal",
                  [](Node& n) {
                    n.setAttr(Attribute::makeInt("dtype", 99));
                    n.setAttr(Attribute::makeInts("shape", {2}));
                  })
                .find("dtype 99 is not a data type"),
            std::string::npos);
}

}  // namespace
}  // namespace qopt::interp
