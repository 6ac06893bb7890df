// Set operations: Unique (opset 11).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "ArrayOps.h"
#include "KernelSupport.h"

namespace qopt::interp {

namespace {

/// Three-way comparison of two elements. Floats compare by value (-0 equals 0), with every NaN
/// equal to every other and after all numbers, as numpy.unique orders and groups them.
template <class T>
int compareElements(const T& a, const T& b) {
  if constexpr (kIsFloat<T>) {
    auto x = toCompute(a);
    auto y = toCompute(b);
    bool xNan = std::isnan(x);
    bool yNan = std::isnan(y);
    if (xNan || yNan) return static_cast<int>(xNan) - static_cast<int>(yNan);
    return x < y ? -1 : (y < x ? 1 : 0);
  } else {
    return a < b ? -1 : (b < a ? 1 : 0);
  }
}

/// The input seen as `count` slices along the unique axis (single elements when flattened),
/// slice i being elements (o * count + i) * inner + k for o < outer and k < inner, compared
/// lexicographically in that order (numpy's order for slices along an axis).
struct Slices {
  int64_t outer, count, inner;
};

template <class T>
int compareSlices(const T* data, const Slices& s, int64_t i, int64_t j) {
  for (int64_t o = 0; o < s.outer; ++o) {
    const T* a = data + (o * s.count + i) * s.inner;
    const T* b = data + (o * s.count + j) * s.inner;
    for (int64_t k = 0; k < s.inner; ++k) {
      int c = compareElements(a[k], b[k]);
      if (c != 0) return c;
    }
  }
  return 0;
}

/// The unique slices: for each, the index of its first occurrence, and for each slice, the
/// position of its unique slice. Ordered by value (`sorted`) or by first occurrence.
struct Grouping {
  std::vector<int64_t> first;    // per unique slice
  std::vector<int64_t> counts;   // per unique slice
  std::vector<int64_t> inverse;  // per input slice
};

template <class T>
Grouping groupSlices(const T* data, const Slices& s, bool sorted) {
  std::vector<int64_t> order(static_cast<size_t>(s.count));
  std::iota(order.begin(), order.end(), 0);
  // Stable: within a run of equal slices the first is the first occurrence.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t i, int64_t j) { return compareSlices(data, s, i, j) < 0; });
  Grouping g;
  std::vector<int64_t> groupOf(static_cast<size_t>(s.count));
  for (size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || compareSlices(data, s, order[r - 1], order[r]) != 0) {
      g.first.push_back(order[r]);
      g.counts.push_back(0);
    }
    groupOf[static_cast<size_t>(order[r])] = static_cast<int64_t>(g.first.size()) - 1;
    ++g.counts.back();
  }
  std::vector<int64_t> position(g.first.size());
  std::iota(position.begin(), position.end(), 0);
  if (!sorted) {
    std::vector<int64_t> byFirst(g.first.size());
    std::iota(byFirst.begin(), byFirst.end(), 0);
    std::sort(byFirst.begin(), byFirst.end(), [&](int64_t a, int64_t b) {
      return g.first[static_cast<size_t>(a)] < g.first[static_cast<size_t>(b)];
    });
    std::vector<int64_t> first, counts;
    for (size_t p = 0; p < byFirst.size(); ++p) {
      auto group = static_cast<size_t>(byFirst[p]);
      position[group] = static_cast<int64_t>(p);
      first.push_back(g.first[group]);
      counts.push_back(g.counts[group]);
    }
    g.first = std::move(first);
    g.counts = std::move(counts);
  }
  g.inverse.resize(static_cast<size_t>(s.count));
  for (size_t i = 0; i < groupOf.size(); ++i) {
    g.inverse[i] = position[static_cast<size_t>(groupOf[i])];
  }
  return g;
}

Array int64Vector(const std::vector<int64_t>& values) {
  Array a(DataType::Int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), a.data<int64_t>());
  return a;
}

void unique(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  int64_t sorted = ctx.node.attrInt("sorted", 1);
  if (sorted != 0 && sorted != 1) ctx.fail(fmt::format("sorted must be 0 or 1, got {}", sorted));
  const Attribute* axisAttr = ctx.node.findAttr("axis");
  Slices s{1, x.numel(), 1};
  Shape outShape;
  int64_t axis = -1;
  if (axisAttr != nullptr) {
    if (axisAttr->kind != AttrKind::Int) ctx.fail("axis must be an integer");
    if (x.rank() == 0) ctx.fail("axis is given but the input is a scalar");
    if (axisAttr->i < -x.rank() || axisAttr->i >= x.rank()) {
      ctx.fail(fmt::format("axis {} is out of range for rank {}", axisAttr->i, x.rank()));
    }
    axis = normalizeAxis(axisAttr->i, x.rank());
    s = Slices{product(x.shape(), 0, static_cast<size_t>(axis)), x.dim(axis),
               product(x.shape(), static_cast<size_t>(axis) + 1)};
    outShape = x.shape();
  }

  Grouping g;
  auto group = [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, std::string>) {
      g = groupSlices(x.strings().data(), s, sorted != 0);
    } else {
      g = groupSlices(x.data<T>(), s, sorted != 0);
    }
  };
  if (x.dataType() == DataType::String) {
    group(TypeTag<std::string>{});
  } else if (x.dataType() == DataType::Bool) {
    group(TypeTag<bool>{});
  } else {
    dispatchTypes(NumericTypes{}, x.dataType(), group, [&] {
      ctx.fail(fmt::format("element type {} is not supported", dataTypeName(x.dataType())));
    });
  }

  auto uniques = static_cast<int64_t>(g.first.size());
  if (axis < 0) {
    outShape = {uniques};
  } else {
    outShape[static_cast<size_t>(axis)] = uniques;
  }
  Array y(x.dataType(), outShape);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t u = 0; u < uniques; ++u) {
      copyElements(x, (o * s.count + g.first[static_cast<size_t>(u)]) * s.inner, y,
                   (o * uniques + u) * s.inner, s.inner);
    }
  }
  ctx.outputs[0] = std::move(y);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = int64Vector(g.first);
  if (ctx.outputs.size() > 2) ctx.outputs[2] = int64Vector(g.inverse);
  if (ctx.outputs.size() > 3) ctx.outputs[3] = int64Vector(g.counts);
}

}  // namespace

void registerSetOpsKernels(KernelRegistry& r) {
  r.add("", "Unique", 11, unique);
}

}  // namespace qopt::interp
