#include "qopt/analysis/Metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "CompareKernels.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {

namespace {

// JSON has no infinity; an infinite SQNR is meaningful (no error at all), so it is spelled.
Json numberOrSpelled(double value) {
  if (std::isfinite(value)) return Json(value);
  if (std::isnan(value)) return Json("nan");
  return Json(value > 0 ? "inf" : "-inf");
}

// The first index of the largest value in row `row` (NaN never wins).
template <class T>
int64_t argmaxRow(std::span<const T> values, int64_t row, int64_t columns) {
  int64_t best = 0;
  double bestValue = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < columns; ++c) {
    const double v = values[static_cast<size_t>(row * columns + c)];
    if (v > bestValue) {
      bestValue = v;
      best = c;
    }
  }
  return best;
}

// The top-2 margin of a row of class scores as probabilities: the row itself when it already is
// a distribution (non-negative, summing to 1 within 1e-3), else its softmax.
template <class T>
double topTwoMargin(std::span<const T> values, int64_t row, int64_t columns) {
  const auto begin = static_cast<size_t>(row * columns);
  const std::span<const T> r = values.subspan(begin, static_cast<size_t>(columns));
  double sum = 0, largest = -std::numeric_limits<double>::infinity();
  bool distribution = true;
  for (T v : r) {
    const double d = static_cast<double>(v);
    if (!std::isfinite(d)) return 0;
    distribution = distribution && d >= 0;
    sum += d;
    largest = std::max(largest, d);
  }
  distribution = distribution && std::fabs(sum - 1.0) <= 1e-3;
  double first = 0, second = 0, total = 0;
  for (T v : r) {
    const double p =
        distribution ? static_cast<double>(v) : std::exp(static_cast<double>(v) - largest);
    total += p;
    if (p > first) {
      second = first;
      first = p;
    } else if (p > second) {
      second = p;
    }
  }
  return total > 0 ? (first - second) / total : 0;
}

}  // namespace

Json ErrorMetrics::toJson() const {
  Json out = Json::object();
  out.append("count", count);
  out.append("max-abs", maxAbs);
  out.append("mean-abs", meanAbs);
  out.append("mse", mse);
  out.append("cosine", cosine);
  out.append("sqnr-db", numberOrSpelled(sqnrDb));
  out.append("kl", klDivergence);
  out.append("overlap", histogramOverlap);
  if (top1Agreement) out.append("top1", *top1Agreement);
  if (clearTop1Agreement) {
    out.append("clear-top1", *clearTop1Agreement);
    out.append("clear-rows", clearTop1Rows);
  }
  if (mapIou) {
    out.append("map-iou", *mapIou);
    out.append("map-union", mapUnion);
  }
  out.append("rel-err", numberOrSpelled(relativeError()));
  if (nonFinite > 0) out.append("non-finite", nonFinite);
  return out;
}

double ErrorMetrics::relativeError() const {
  if (std::isinf(sqnrDb)) {
    return sqnrDb > 0 ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return std::pow(10.0, -sqnrDb / 20.0);
}

void ErrorAccumulator::add(std::span<const double> reference, std::span<const double> actual) {
  addValues(reference, actual);
}

void ErrorAccumulator::add(std::span<const float> reference, std::span<const float> actual) {
  addValues(reference, actual);
}

// float values take part as the doubles they convert to exactly: the same sums either way.
template <class T>
void ErrorAccumulator::addValues(std::span<const T> reference, std::span<const T> actual) {
  if (reference.size() != actual.size()) {
    throw Error(ErrorKind::Internal, {}, {},
                fmt::format("comparing {} reference values with {} actual values", reference.size(),
                            actual.size()));
  }
  // Once the histogram has bins, the values are binned in the pass that sums them; they are
  // binned again only when they fall outside those bins (the bins widen first).
  const size_t bins = static_cast<size_t>(histogram_.bins());
  std::vector<uint64_t> counts;
  uint64_t counted[2] = {0, 0};
  detail::PairSums sums;
  if (histogram_.binWidth() > 0) {
    counts.assign(2 * bins, 0);
    const detail::BinGrid grid{histogram_.low(), 1.0 / histogram_.binWidth(), bins};
    sums = detail::sumAndCountPairs(reference.data(), actual.data(), reference.size(), grid,
                                    counts.data(), counts.data() + bins, counted);
  } else {
    sums = detail::sumPairs(reference.data(), actual.data(), reference.size());
  }
  count_ += sums.count;
  nonFinite_ += sums.nonFinite;
  maxAbs_ = std::max(maxAbs_, sums.maxAbs);
  sumAbs_ += sums.sumAbs;
  sumSquaredError_ += sums.sumSquaredError;
  sumReferenceSquared_ += sums.sumReferenceSquared;
  sumActualSquared_ += sums.sumActualSquared;
  sumProduct_ += sums.sumProduct;
  if (!counts.empty() && histogram_.covers(sums.low, sums.high)) {
    const std::span<const uint64_t> all(counts);
    histogram_.addCounts(all.first(bins), all.subspan(bins), counted[0] + counted[1]);
    return;
  }
  histogram_.addInRange(reference, actual, sums.low, sums.high);
}

void ErrorAccumulator::add(const interp::Array& reference, const interp::Array& actual,
                           const std::string& label) {
  if (reference.shape() != actual.shape()) {
    throw Error(ErrorKind::Verification, {}, label,
                fmt::format("shape [{}] differs from the reference shape [{}]",
                            fmt::join(actual.shape(), ","), fmt::join(reference.shape(), ",")));
  }
  if (reference.dataType() == DataType::Float && actual.dataType() == DataType::Float) {
    std::span<const float> r(reference.data<float>(), static_cast<size_t>(reference.numel()));
    std::span<const float> a(actual.data<float>(), static_cast<size_t>(actual.numel()));
    addValues(r, a);
    addDecisions(r, a, reference.shape());
    return;
  }
  std::vector<double> r = toDoubles(reference);
  std::vector<double> a = toDoubles(actual);
  addValues(std::span<const double>(r), std::span<const double>(a));
  addDecisions(std::span<const double>(r), std::span<const double>(a), reference.shape());
}

template <class T>
void ErrorAccumulator::addDecisions(std::span<const T> reference, std::span<const T> actual,
                                    const interp::Shape& shape) {
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t last = rank > 0 ? shape.back() : 1;
  const int64_t numel = static_cast<int64_t>(reference.size());
  switch (rule_.kind) {
    case DecisionRule::Kind::Default:
      if ((rank == 2 || (decisions_ && rank == 3)) && last > 1) {
        addTop1(reference, actual, numel / last, last);
      }
      return;
    case DecisionRule::Kind::LastAxis:
      if (rank >= 1 && last > 1) addTop1(reference, actual, numel / last, last);
      return;
    case DecisionRule::Kind::ChannelAxis:
      if (rank >= 3 && shape[1] > 1) addChannelClasses(reference, actual, shape);
      return;
    case DecisionRule::Kind::Threshold:
      addThreshold(reference, actual, rank >= 3);
      return;
  }
}

template <class T>
void ErrorAccumulator::addChannelClasses(std::span<const T> reference, std::span<const T> actual,
                                         const interp::Shape& shape) {
  const int64_t channels = shape[1];
  int64_t positions = 1;
  for (size_t d = 2; d < shape.size(); ++d) positions *= shape[d];
  std::vector<double> r(static_cast<size_t>(channels));
  std::vector<double> a(static_cast<size_t>(channels));
  for (int64_t n = 0; n < shape[0]; ++n) {
    for (int64_t p = 0; p < positions; ++p) {
      for (int64_t c = 0; c < channels; ++c) {
        const auto at = static_cast<size_t>((n * channels + c) * positions + p);
        r[static_cast<size_t>(c)] = static_cast<double>(reference[at]);
        a[static_cast<size_t>(c)] = static_cast<double>(actual[at]);
      }
      addTop1(std::span<const double>(r), std::span<const double>(a), 1, channels);
    }
  }
}

template <class T>
void ErrorAccumulator::addThreshold(std::span<const T> reference, std::span<const T> actual,
                                    bool map) {
  const double t = rule_.threshold;
  for (size_t i = 0; i < reference.size(); ++i) {
    const double r = static_cast<double>(reference[i]);
    const double a = static_cast<double>(actual[i]);
    const bool rp = r > t;
    const bool ap = a > t;
    if (rp == ap) ++top1Agree_;
    ++top1Rows_;
    // The margin of the two-way decision, as topTwoMargin measures a row of class scores.
    const double p = rule_.logits ? 1.0 / (1.0 + std::exp(-r)) : r;
    if (std::isfinite(p) && std::fabs(2.0 * p - 1.0) >= kClearMargin) {
      if (rp == ap) ++clearAgree_;
      ++clearRows_;
    }
    if (map) {
      if (rp && ap) ++mapIntersection_;
      if (rp || ap) ++mapUnion_;
    }
  }
}

template <class T>
void ErrorAccumulator::addTop1(std::span<const T> reference, std::span<const T> actual,
                               int64_t rows, int64_t columns) {
  for (int64_t row = 0; row < rows; ++row) {
    const bool agree = argmaxRow(reference, row, columns) == argmaxRow(actual, row, columns);
    if (agree) ++top1Agree_;
    ++top1Rows_;
    if (decisions_ && topTwoMargin(reference, row, columns) >= kClearMargin) {
      if (agree) ++clearAgree_;
      ++clearRows_;
    }
  }
}

ErrorMetrics ErrorAccumulator::result() const {
  ErrorMetrics m;
  m.count = count_;
  m.nonFinite = nonFinite_;
  m.maxAbs = maxAbs_;
  if (count_ > 0) {
    m.meanAbs = sumAbs_ / static_cast<double>(count_);
    m.mse = sumSquaredError_ / static_cast<double>(count_);
  }
  const double norms = std::sqrt(sumReferenceSquared_) * std::sqrt(sumActualSquared_);
  if (norms > 0) {
    m.cosine = std::clamp(sumProduct_ / norms, -1.0, 1.0);
  } else {
    m.cosine = sumReferenceSquared_ == sumActualSquared_ ? 1.0 : 0.0;
  }
  if (sumSquaredError_ == 0) {
    m.sqnrDb = std::numeric_limits<double>::infinity();
  } else if (sumReferenceSquared_ == 0) {
    m.sqnrDb = -std::numeric_limits<double>::infinity();
  } else {
    m.sqnrDb = 10.0 * std::log10(sumReferenceSquared_ / sumSquaredError_);
  }
  m.klDivergence = klDivergence(histogram_.reference(), histogram_.actual());
  m.histogramOverlap = histogramOverlap(histogram_.reference(), histogram_.actual());
  if (top1Rows_ > 0) {
    m.top1Agreement = static_cast<double>(top1Agree_) / static_cast<double>(top1Rows_);
    m.top1Rows = top1Rows_;
  }
  if (clearRows_ > 0) {
    m.clearTop1Agreement = static_cast<double>(clearAgree_) / static_cast<double>(clearRows_);
    m.clearTop1Rows = clearRows_;
  }
  if (mapUnion_ > 0) {
    m.mapIou = static_cast<double>(mapIntersection_) / static_cast<double>(mapUnion_);
    m.mapUnion = mapUnion_;
  }
  return m;
}

ErrorMetrics compareValues(std::span<const double> reference, std::span<const double> actual,
                           int histogramBins) {
  ErrorAccumulator accumulator(histogramBins);
  accumulator.add(reference, actual);
  return accumulator.result();
}

std::vector<double> toDoubles(const interp::Array& array) {
  std::vector<double> out(static_cast<size_t>(array.numel()));
  if (array.dataType() == DataType::Float) {
    const float* data = array.data<float>();
    std::copy(data, data + array.numel(), out.begin());
    return out;
  }
  for (int64_t i = 0; i < array.numel(); ++i) out[static_cast<size_t>(i)] = array.getDouble(i);
  return out;
}

double metricFromJson(const Json& value) {
  if (value.isNumber()) return value.asDouble();
  if (value.isString()) {
    if (value.asString() == "inf") return std::numeric_limits<double>::infinity();
    if (value.asString() == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string formatMetric(double value, int decimals) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::isnan(value)) return "nan";
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace qopt::analysis
