// Random: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike (opset 1) and
// Bernoulli (opset 15).
//
// qopt gives the same output for the same model and inputs, on every run, so these ops draw from
// a documented generator restarted for each node execution instead of from a random source:
//   - the engine is std::mt19937_64 (the C++ standard fixes its sequence), seeded with the bit
//     pattern of the node's `seed` attribute (a float), or with the engine's default seed 5489
//     when the node has none (so two unseeded nodes of one shape draw the same values);
//   - elements are drawn in row-major order;
//   - a uniform draw u in [0, 1) is the top 53 bits of one engine output times 2^-53;
//     RandomUniform gives low + (high - low) * u, Bernoulli gives 1 when u < p, else 0;
//   - normal draws come in pairs from two uniform draws u1, u2 (Box-Muller):
//     r = sqrt(-2 ln(1 - u1)), then r cos(2 pi u2) and r sin(2 pi u2); RandomNormal gives
//     mean + scale * z.
// Values are computed in double and rounded to the output type. As the specification says, they
// differ from other implementations' even for the same seed.
#include <bit>
#include <cmath>
#include <numbers>
#include <optional>
#include <random>

#include "KernelSupport.h"

namespace qopt::interp {

namespace {

class Generator {
 public:
  explicit Generator(const KernelContext& ctx) {
    if (const Attribute* a = ctx.node.findAttr("seed")) {
      if (a->kind != AttrKind::Float) ctx.fail("seed must be a float");
      engine_.seed(std::bit_cast<uint32_t>(a->f));
    }
  }

  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  double normal() {
    if (spare_) {
      double z = *spare_;
      spare_.reset();
      return z;
    }
    double r = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    double angle = 2.0 * std::numbers::pi * uniform();
    spare_ = r * std::sin(angle);
    return r * std::cos(angle);
  }

 private:
  std::mt19937_64 engine_;  // default-seeded (5489) until a seed attribute says otherwise
  std::optional<double> spare_;
};

/// The `dtype` attribute, else `fallback`.
DataType dtypeAttr(const KernelContext& ctx, DataType fallback) {
  const Attribute* a = ctx.node.findAttr("dtype");
  if (a == nullptr) return fallback;
  std::optional<DataType> type = dataTypeFromInt(a->i);
  if (a->kind != AttrKind::Int || !type || *type == DataType::Undefined) {
    ctx.fail(fmt::format("dtype {} is not a data type", a->i));
  }
  return *type;
}

/// A float attribute that must be finite.
double finiteAttr(const KernelContext& ctx, const char* name, float fallback) {
  float v = ctx.node.attrFloat(name, fallback);
  if (!std::isfinite(v)) ctx.fail(fmt::format("{} must be finite, got {}", name, v));
  return v;
}

/// The output shape: the `shape` attribute, or the input's shape for the -Like ops.
Shape outputShape(const KernelContext& ctx, bool like) {
  if (like) return ctx.in(0).shape();
  const Attribute* a = ctx.node.findAttr("shape");
  if (a == nullptr || a->kind != AttrKind::Ints) ctx.fail("attribute 'shape' is required");
  for (int64_t d : a->ints) {
    if (d < 0) ctx.fail(fmt::format("shape {} has a negative dimension", shapeString(a->ints)));
  }
  return a->ints;
}

/// The output type: `dtype`, else float for RandomUniform/RandomNormal and the input's type for
/// the -Like ops. Only floating-point types can hold these draws.
DataType floatOutputType(const KernelContext& ctx, bool like) {
  DataType type = dtypeAttr(ctx, like ? ctx.in(0).dataType() : DataType::Float);
  bool isFloat = type == DataType::Float || type == DataType::Double || type == DataType::Float16 ||
                 type == DataType::BFloat16;
  if (!isFloat) {
    ctx.fail(fmt::format("the output type must be float, double, float16 or bfloat16, got {}{}",
                         dataTypeName(type),
                         like && !ctx.node.findAttr("dtype") ? " (the input's; set dtype)" : ""));
  }
  return type;
}

/// A floating-point array of `shape` whose elements are draw() in row-major order.
template <class Draw>
Array fillFloat(DataType type, Shape shape, Draw&& draw) {
  Array out(type, std::move(shape));
  dispatchFloat(type, [&]<class T>(TypeTag<T>) {
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      o[i] = fromCompute<T>(static_cast<ComputeT<T>>(draw()));
    }
  });
  return out;
}

void randomUniform(KernelContext& ctx, bool like) {
  double low = finiteAttr(ctx, "low", 0.0f);
  double high = finiteAttr(ctx, "high", 1.0f);
  if (high < low) ctx.fail(fmt::format("high {} is less than low {}", high, low));
  DataType type = floatOutputType(ctx, like);
  Generator gen(ctx);
  ctx.outputs[0] =
      fillFloat(type, outputShape(ctx, like), [&] { return low + (high - low) * gen.uniform(); });
}

void randomNormal(KernelContext& ctx, bool like) {
  double mean = finiteAttr(ctx, "mean", 0.0f);
  double scale = finiteAttr(ctx, "scale", 1.0f);
  if (scale < 0) ctx.fail(fmt::format("scale must not be negative, got {}", scale));
  DataType type = floatOutputType(ctx, like);
  Generator gen(ctx);
  ctx.outputs[0] =
      fillFloat(type, outputShape(ctx, like), [&] { return mean + scale * gen.normal(); });
}

void bernoulli(KernelContext& ctx) {
  const Array& p = ctx.in(0);
  std::vector<double> probabilities(static_cast<size_t>(p.numel()));
  dispatchTypes(
      FloatTypes{}, p.dataType(),
      [&]<class T>(TypeTag<T>) {
        for (int64_t i = 0; i < p.numel(); ++i) {
          double v = static_cast<double>(toCompute(p.data<T>()[i]));
          if (!(v >= 0.0 && v <= 1.0)) {
            ctx.fail(fmt::format("probability {} at element {} is not in [0, 1]", v, i));
          }
          probabilities[static_cast<size_t>(i)] = v;
        }
      },
      [&] {
        ctx.fail(fmt::format("the input must be float, double, float16 or bfloat16, got {}",
                             dataTypeName(p.dataType())));
      });
  DataType type = dtypeAttr(ctx, p.dataType());
  Generator gen(ctx);
  Array out(type, p.shape());
  auto fill = [&]<class T>(TypeTag<T>) {
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      bool one = gen.uniform() < probabilities[static_cast<size_t>(i)];
      if constexpr (std::is_same_v<T, bool>) {
        o[i] = one;
      } else {
        o[i] = fromCompute<T>(static_cast<ComputeT<T>>(one ? 1 : 0));
      }
    }
  };
  if (type == DataType::Bool) {
    fill(TypeTag<bool>{});
  } else {
    dispatchTypes(NumericTypes{}, type, fill, [&] {
      ctx.fail(fmt::format("dtype {} cannot hold 0 and 1", dataTypeName(type)));
    });
  }
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void registerRandomKernels(KernelRegistry& r) {
  r.add("", "RandomUniform", 1, [](KernelContext& ctx) { randomUniform(ctx, false); });
  r.add("", "RandomUniformLike", 1, [](KernelContext& ctx) { randomUniform(ctx, true); });
  r.add("", "RandomNormal", 1, [](KernelContext& ctx) { randomNormal(ctx, false); });
  r.add("", "RandomNormalLike", 1, [](KernelContext& ctx) { randomNormal(ctx, true); });
  r.add("", "Bernoulli", 15, bernoulli);
}

}  // namespace qopt::interp
