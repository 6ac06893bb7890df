// Statistics kernels: LRN (local response normalization across channels),
// MeanVarianceNormalization and Det (determinants of square matrices).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "KernelSupport.h"
#include "ThreadPool.h"

namespace qopt::interp {

namespace {

// ---------------------------------------------------------------------------------------------
// LRN

struct LrnParams {
  int64_t size;
  float alpha, beta, bias;
};

// y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta, the window of channel
// c being [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] clipped to the channels.
template <class T>
void lrnPlanes(const KernelContext& ctx, const Array& x, Array& y, const LrnParams& p) {
  using C = ComputeT<T>;
  const int64_t channels = x.dim(1);
  const int64_t inner = product(x.shape(), 2);
  const int64_t before = (p.size - 1) / 2, after = p.size - 1 - before;
  const C scale = static_cast<C>(p.alpha) / static_cast<C>(p.size);
  const C bias = static_cast<C>(p.bias), beta = static_cast<C>(p.beta);
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, inner));
  parallelFor(ctx.pool, x.dim(0) * channels, grain, [&](int64_t p0, int64_t p1) {
    std::vector<C> sums(static_cast<size_t>(inner));
    for (int64_t plane = p0; plane < p1; ++plane) {
      const int64_t n = plane / channels, c = plane % channels;
      std::fill(sums.begin(), sums.end(), C(0));
      const int64_t lo = std::max<int64_t>(0, c - before);
      const int64_t hi = std::min(channels - 1, c + after);
      for (int64_t j = lo; j <= hi; ++j) {
        const T* xs = xp + (n * channels + j) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const C v = toCompute(xs[i]);
          sums[static_cast<size_t>(i)] += v * v;
        }
      }
      const T* xs = xp + plane * inner;
      T* ys = yp + plane * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const C d = bias + scale * sums[static_cast<size_t>(i)];
        ys[i] = fromCompute<T>(toCompute(xs[i]) / std::pow(d, beta));
      }
    }
  });
}

void lrn(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  if (!ctx.node.hasAttr("size")) ctx.fail("attribute 'size' is required");
  LrnParams params{ctx.node.attrInt("size", 0), ctx.node.attrFloat("alpha", 1e-4f),
                   ctx.node.attrFloat("beta", 0.75f), ctx.node.attrFloat("bias", 1.0f)};
  if (params.size <= 0) ctx.fail(fmt::format("size must be positive, got {}", params.size));
  if (x.rank() < 2) {
    ctx.fail(fmt::format("X must have rank 2 or more (N, C, ...), got shape {}",
                         shapeString(x.shape())));
  }
  Array y(x.dataType(), x.shape());
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) { lrnPlanes<T>(ctx, x, y, params); });
  ctx.outputs[0] = std::move(y);
}

// ---------------------------------------------------------------------------------------------
// MeanVarianceNormalization

// Calls fn(i, g) for every element i of `shape` in row-major order, g being the index of its
// group: the element's position with the reduced axes dropped (keptStrides 0 there).
template <class Fn>
void forEachGrouped(const Shape& shape, const std::vector<int64_t>& keptStrides, int64_t numel,
                    Fn&& fn) {
  std::vector<int64_t> index(shape.size(), 0);
  int64_t group = 0;
  for (int64_t i = 0; i < numel; ++i) {
    fn(i, group);
    for (size_t d = shape.size(); d-- > 0;) {
      group += keptStrides[d];
      if (++index[d] < shape[d]) break;
      group -= keptStrides[d] * shape[d];
      index[d] = 0;
    }
  }
}

void meanVarianceNormalization(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> axes = ctx.node.attrInts("axes", {0, 2, 3});
  // The ONNX function reduces with ReduceMean, whose empty axes mean every axis.
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      ctx.fail(fmt::format("axis {} is out of range for X of shape {}", a, shapeString(x.shape())));
    }
    const auto d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reduced[d]) ctx.fail(fmt::format("axis {} is repeated in axes", a));
    reduced[d] = true;
  }
  std::vector<int64_t> keptStrides(static_cast<size_t>(rank), 0);
  int64_t groups = 1;
  for (size_t d = static_cast<size_t>(rank); d-- > 0;) {
    if (reduced[d]) continue;
    keptStrides[d] = groups;
    groups *= x.shape()[d];
  }
  const int64_t numel = x.numel();
  Array y(x.dataType(), x.shape());
  if (numel == 0) {
    ctx.outputs[0] = std::move(y);
    return;
  }
  const double count = static_cast<double>(numel / groups);
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    auto value = [&](int64_t i) { return static_cast<double>(toCompute(xp[i])); };
    // Centred second moments in double (not E[X^2] - E[X]^2 as the function body computes it):
    // the same value, without the cancellation that can make a small variance negative.
    std::vector<double> mean(static_cast<size_t>(groups), 0.0);
    std::vector<double> var(static_cast<size_t>(groups), 0.0);
    forEachGrouped(x.shape(), keptStrides, numel,
                   [&](int64_t i, int64_t g) { mean[static_cast<size_t>(g)] += value(i); });
    for (double& m : mean) m /= count;
    forEachGrouped(x.shape(), keptStrides, numel, [&](int64_t i, int64_t g) {
      const double d = value(i) - mean[static_cast<size_t>(g)];
      var[static_cast<size_t>(g)] += d * d;
    });
    // The function's epsilon, added to the standard deviation.
    constexpr double kEpsilon = 1e-9;
    for (double& v : var) v = std::sqrt(v / count) + kEpsilon;
    forEachGrouped(x.shape(), keptStrides, numel, [&](int64_t i, int64_t g) {
      const size_t s = static_cast<size_t>(g);
      yp[i] = fromCompute<T>(static_cast<ComputeT<T>>((value(i) - mean[s]) / var[s]));
    });
  });
  ctx.outputs[0] = std::move(y);
}

// ---------------------------------------------------------------------------------------------
// Det

// Determinant of the m x m row-major matrix `a` (overwritten) by LU factorization with partial
// pivoting.
double determinant(std::vector<double>& a, int64_t m) {
  auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * m + c)]; };
  // A NaN could otherwise hide in a column whose pivot search ends at zero ("singular").
  for (double v : a) {
    if (std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
  }
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < m; ++r) {
      if (std::fabs(at(r, k)) > std::fabs(at(pivot, k))) pivot = r;
    }
    if (at(pivot, k) == 0) return 0;  // singular
    if (pivot != k) {
      for (int64_t c = k; c < m; ++c) std::swap(at(k, c), at(pivot, c));
      det = -det;
    }
    const double p = at(k, k);
    det *= p;
    for (int64_t r = k + 1; r < m; ++r) {
      const double f = at(r, k) / p;
      if (f == 0) continue;
      for (int64_t c = k + 1; c < m; ++c) at(r, c) -= f * at(k, c);
    }
  }
  return det;
}

void det(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2)) {
    ctx.fail(fmt::format("X must have shape [*, M, M], got {}", shapeString(x.shape())));
  }
  const int64_t m = x.dim(-1);
  Shape outShape(x.shape().begin(), x.shape().end() - 2);
  const int64_t batches = product(outShape);
  Array y(x.dataType(), outShape);
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, m * m * m));
  dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    parallelFor(ctx.pool, batches, grain, [&](int64_t b0, int64_t b1) {
      // Eliminated in double: the subtractions cancel digits a float elimination would lose.
      std::vector<double> a(static_cast<size_t>(m * m));
      for (int64_t b = b0; b < b1; ++b) {
        for (int64_t i = 0; i < m * m; ++i) {
          a[static_cast<size_t>(i)] = static_cast<double>(toCompute(xp[b * m * m + i]));
        }
        yp[b] = fromCompute<T>(static_cast<ComputeT<T>>(determinant(a, m)));
      }
    });
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void registerStatisticsKernels(KernelRegistry& registry) {
  registry.add({
      {"LRN", 1, lrn},
      {"MeanVarianceNormalization", 9, meanVarianceNormalization},
      {"Det", 11, det},
  });
}

}  // namespace qopt::interp
