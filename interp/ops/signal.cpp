// Signal processing: DFT (opset 17, and opset 20's form where axis is an input), STFT, the
// cosine-sum windows (Hann, Hamming, Blackman) and MelWeightMatrix. Everything is computed in
// double whatever the element type; the transforms run through ops/Fft.h.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <vector>

#include "Fft.h"
#include "KernelSupport.h"
#include "ThreadPool.h"

namespace qopt::interp {

namespace {

// ---------------------------------------------------------------------------------------------
// Inputs, attributes and element conversion

/// An int32 or int64 input holding one value.
int64_t intScalar(const KernelContext& ctx, size_t index, const char* name) {
  const Array& a = ctx.in(index);
  if (a.dataType() != DataType::Int32 && a.dataType() != DataType::Int64) {
    ctx.fail(fmt::format("{} must be int32 or int64, got {}", name, dataTypeName(a.dataType())));
  }
  if (a.numel() != 1) {
    ctx.fail(fmt::format("{} must be a scalar, got shape {}", name, shapeString(a.shape())));
  }
  return a.getInt64(0);
}

bool isFloatType(DataType type) {
  return type == DataType::Float || type == DataType::Double || type == DataType::Float16 ||
         type == DataType::BFloat16;
}

void requireFloat(const KernelContext& ctx, const Array& a, const char* name) {
  if (!isFloatType(a.dataType())) {
    ctx.fail(fmt::format("{} must be float, double, float16 or bfloat16, got {}", name,
                         dataTypeName(a.dataType())));
  }
}

/// A float input holding one finite value.
double floatScalar(const KernelContext& ctx, size_t index, const char* name) {
  const Array& a = ctx.in(index);
  requireFloat(ctx, a, name);
  if (a.numel() != 1) {
    ctx.fail(fmt::format("{} must be a scalar, got shape {}", name, shapeString(a.shape())));
  }
  double v = a.getDouble(0);
  if (!std::isfinite(v)) ctx.fail(fmt::format("{} must be finite, got {}", name, v));
  return v;
}

/// An attribute that the specification allows to be 0 or 1 only.
bool flagAttr(const KernelContext& ctx, const char* name, int64_t fallback) {
  int64_t v = ctx.node.attrInt(name, fallback);
  if (v != 0 && v != 1) ctx.fail(fmt::format("{} must be 0 or 1, got {}", name, v));
  return v == 1;
}

/// The output_datatype attribute of the generator ops: any numeric type (default float).
DataType outputDatatype(const KernelContext& ctx) {
  int64_t code = ctx.node.attrInt("output_datatype", static_cast<int64_t>(DataType::Float));
  std::optional<DataType> type = dataTypeFromInt(code);
  auto notNumeric = [&] {
    ctx.fail(fmt::format("output_datatype {} is not a numeric tensor type", code));
  };
  if (!type) notNumeric();
  dispatchTypes(
      NumericTypes{}, *type, [](auto) {}, notNumeric);
  return *type;
}

/// Integer outputs truncate toward zero, as the Cast that ends the specification's function
/// bodies does; the values converted here all lie in [0, 1].
template <class T>
T fromDouble(double v) {
  if constexpr (kIsFloat<T>) {
    return fromCompute<T>(static_cast<ComputeT<T>>(v));
  } else {
    return static_cast<T>(std::trunc(v));
  }
}

template <class T>
double toDouble(T v) {
  return static_cast<double>(toCompute(v));
}

// ---------------------------------------------------------------------------------------------
// Running one transform per signal

// Below this many complex values in all, one thread does the whole op.
constexpr int64_t kMinParallelValues = 1 << 14;

/// Calls fn(first, end, data, work) on slices of the signals [0, count), at most one slice per
/// thread, each with its own buffers of plan.size() and plan.workSize() values. The buffers are
/// made on the calling thread, where the allocation limit is in force.
void forEachSignal(const KernelContext& ctx, const Fft& plan, int64_t count,
                   const std::function<void(int64_t, int64_t, Complex*, Complex*)>& fn) {
  int64_t slices = count * plan.size() < kMinParallelValues
                       ? 1
                       : std::min<int64_t>(std::max(ctx.threads, 1), count);
  std::vector<ComplexBuffer> data, work;
  for (int64_t s = 0; s < slices; ++s) {
    data.emplace_back(plan.size());
    work.emplace_back(plan.workSize());
  }
  parallelFor(ctx.pool, slices, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      auto i = static_cast<size_t>(s);
      fn(count * s / slices, count * (s + 1) / slices, data[i].data(), work[i].data());
    }
  });
}

/// Transforms `buffer` (n values) and writes its first `bins` values, divided by n for an
/// inverse transform, as (real, imaginary) pairs `stride` pairs apart from `out`.
template <class T>
void transformInto(const Fft& plan, bool inverse, Complex* buffer, Complex* work, int64_t bins,
                   T* out, int64_t stride) {
  plan.run(buffer, work);
  double scale = inverse ? 1.0 / static_cast<double>(plan.size()) : 1.0;
  for (int64_t k = 0; k < bins; ++k) {
    Complex v = buffer[k] * scale;
    out[k * stride * 2] = fromDouble<T>(v.real());
    out[k * stride * 2 + 1] = fromDouble<T>(v.imag());
  }
}

// ---------------------------------------------------------------------------------------------
// DFT

void dft(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  requireFloat(ctx, x, "input");
  const bool inverse = flagAttr(ctx, "inverse", 0);
  const bool onesided = flagAttr(ctx, "onesided", 0);
  const int64_t rank = x.rank();
  if (rank < 2 || (x.shape().back() != 1 && x.shape().back() != 2)) {
    ctx.fail(fmt::format(
        "the input must have rank 2 or more and a last dimension of 1 (real) or 2 (complex), got "
        "shape {}",
        shapeString(x.shape())));
  }
  const int64_t components = x.shape().back();
  int64_t axis;
  if (ctx.opset >= 20) {
    if (ctx.node.hasAttr("axis")) ctx.fail("axis is an input since opset 20, not an attribute");
    axis = ctx.optIn(2) ? intScalar(ctx, 2, "axis") : -2;
  } else {
    axis = ctx.node.attrInt("axis", 1);
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank - 1) {
    ctx.fail(fmt::format(
        "axis {} is out of range for an input of rank {} (the last dimension holds the real and "
        "imaginary parts and cannot be transformed)",
        axis, rank));
  }
  if (onesided && inverse) ctx.fail("onesided and inverse cannot both be 1");
  if (onesided && components == 2) {
    ctx.fail("onesided output needs a real input (last dimension 1), got a complex one");
  }
  const int64_t length = x.dim(a);
  int64_t n = length;
  if (ctx.optIn(1)) {
    n = intScalar(ctx, 1, "dft_length");
    if (n < 1) ctx.fail(fmt::format("dft_length must be at least 1, got {}", n));
  } else if (n < 1) {
    ctx.fail(fmt::format("the input has no samples along axis {} and no dft_length is given", a));
  }
  const int64_t bins = onesided ? n / 2 + 1 : n;

  Shape outShape = x.shape();
  outShape[static_cast<size_t>(a)] = bins;
  outShape.back() = 2;
  Array out(x.dataType(), outShape);
  const int64_t outer = product(x.shape(), 0, static_cast<size_t>(a));
  const int64_t inner =
      product(x.shape(), static_cast<size_t>(a) + 1, static_cast<size_t>(rank) - 1);
  const int64_t signals = outer * inner;
  if (signals > 0) {
    Fft plan(n, inverse);
    const int64_t taken = std::min(length, n);  // zero-padded or truncated to n
    dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
      const T* in = x.data<T>();
      T* o = out.data<T>();
      forEachSignal(ctx, plan, signals,
                    [&](int64_t first, int64_t end, Complex* buf, Complex* work) {
                      for (int64_t s = first; s < end; ++s) {
                        int64_t before = s / inner, after = s % inner;
                        const T* src = in + (before * length * inner + after) * components;
                        for (int64_t j = 0; j < taken; ++j) {
                          const T* v = src + j * inner * components;
                          buf[j] = Complex(toDouble(v[0]), components == 2 ? toDouble(v[1]) : 0.0);
                        }
                        for (int64_t j = taken; j < n; ++j) buf[j] = 0.0;
                        transformInto(plan, inverse, buf, work, bins,
                                      o + (before * bins * inner + after) * 2, inner);
                      }
                    });
    });
  }
  ctx.outputs[0] = std::move(out);
}

// ---------------------------------------------------------------------------------------------
// STFT

void stft(KernelContext& ctx) {
  const Array& x = ctx.in(0);
  requireFloat(ctx, x, "signal");
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2)) {
    ctx.fail(fmt::format(
        "signal must have shape [batch, length, 1] (real) or [batch, length, 2] (complex), got {}",
        shapeString(x.shape())));
  }
  const int64_t components = x.dim(2);
  const bool onesided = flagAttr(ctx, "onesided", 1);
  if (onesided && components == 2) {
    ctx.fail("onesided output (the default) needs a real signal; set onesided=0 for a complex one");
  }
  const int64_t step = intScalar(ctx, 1, "frame_step");
  if (step < 1) ctx.fail(fmt::format("frame_step must be at least 1, got {}", step));
  const Array* window = ctx.optIn(2);
  const bool hasFrameLength = ctx.optIn(3) != nullptr;
  if (!window && !hasFrameLength) ctx.fail("a window or a frame_length is required");
  int64_t n;
  if (window) {
    if (window->dataType() != x.dataType()) {
      ctx.fail(fmt::format("window has type {} but signal has type {}",
                           dataTypeName(window->dataType()), dataTypeName(x.dataType())));
    }
    if (window->rank() != 1) {
      ctx.fail(fmt::format("window must have rank 1, got shape {}", shapeString(window->shape())));
    }
    n = window->numel();
    if (hasFrameLength) {
      int64_t frameLength = intScalar(ctx, 3, "frame_length");
      if (frameLength != n) {
        ctx.fail(
            fmt::format("frame_length {} differs from the window's length {}", frameLength, n));
      }
    }
  } else {
    n = intScalar(ctx, 3, "frame_length");
  }
  if (n < 1) ctx.fail(fmt::format("the frame length must be at least 1, got {}", n));
  const int64_t batch = x.dim(0), length = x.dim(1);
  if (n > length) {
    ctx.fail(fmt::format("the frame length {} exceeds the signal length {}", n, length));
  }
  const int64_t frames = (length - n) / step + 1;
  const int64_t bins = onesided ? n / 2 + 1 : n;

  Array out(x.dataType(), {batch, frames, bins, 2});
  const int64_t signals = batch * frames;
  if (signals > 0) {
    Fft plan(n, false);
    dispatchFloat(x.dataType(), [&]<class T>(TypeTag<T>) {
      const T* in = x.data<T>();
      const T* w = window ? window->data<T>() : nullptr;
      T* o = out.data<T>();
      forEachSignal(ctx, plan, signals,
                    [&](int64_t first, int64_t end, Complex* buf, Complex* work) {
                      for (int64_t s = first; s < end; ++s) {
                        int64_t b = s / frames, f = s % frames;
                        const T* src = in + (b * length + f * step) * components;
                        for (int64_t j = 0; j < n; ++j) {
                          const T* v = src + j * components;
                          Complex sample(toDouble(v[0]), components == 2 ? toDouble(v[1]) : 0.0);
                          buf[j] = w ? sample * toDouble(w[j]) : sample;
                        }
                        transformInto(plan, false, buf, work, bins, o + s * bins * 2, 1);
                      }
                    });
    });
  }
  ctx.outputs[0] = std::move(out);
}

// ---------------------------------------------------------------------------------------------
// Windows

/// w[i] = a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N), with N = size (periodic) or size - 1
/// (symmetric).
void cosineSumWindow(KernelContext& ctx, double a0, double a1, double a2) {
  const int64_t size = intScalar(ctx, 0, "size");
  if (size < 1) ctx.fail(fmt::format("size must be at least 1, got {}", size));
  const bool periodic = flagAttr(ctx, "periodic", 1);
  if (!periodic && size < 2) {
    ctx.fail("a symmetric window needs a size of at least 2 (its period, size - 1, would be 0)");
  }
  const DataType type = outputDatatype(ctx);
  Array out(type, {size});
  const double period = static_cast<double>(periodic ? size : size - 1);
  dispatchNumeric(type, [&]<class T>(TypeTag<T>) {
    T* o = out.data<T>();
    for (int64_t i = 0; i < size; ++i) {
      double angle = 2.0 * std::numbers::pi * static_cast<double>(i) / period;
      o[i] = fromDouble<T>(a0 - a1 * std::cos(angle) + a2 * std::cos(2.0 * angle));
    }
  });
  ctx.outputs[0] = std::move(out);
}

void hannWindow(KernelContext& ctx) {
  cosineSumWindow(ctx, 0.5, 0.5, 0.0);
}

void hammingWindow(KernelContext& ctx) {
  cosineSumWindow(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0);
}

void blackmanWindow(KernelContext& ctx) {
  cosineSumWindow(ctx, 0.42, 0.5, 0.08);
}

// ---------------------------------------------------------------------------------------------
// MelWeightMatrix

double hertzToMel(double hz) {
  return 2595.0 * std::log10(1.0 + hz / 700.0);
}

double melToHertz(double mel) {
  return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
}

// The specification fixes the mel scale, the output shape and unit-peak triangles; where the
// triangles sit follows ONNX's node test and ONNX Runtime: num_mel_bins + 2 points evenly spaced
// in mel from lower_edge_hertz, (upper - lower) / (num_mel_bins + 2) apart, each mapped to the
// spectrogram bin floor((dft_length + 1) * hz / sample_rate). Triangle i rises from point i to
// point i + 1 and falls to zero at point i + 2.
void melWeightMatrix(KernelContext& ctx) {
  const int64_t melBins = intScalar(ctx, 0, "num_mel_bins");
  const int64_t dftLength = intScalar(ctx, 1, "dft_length");
  const int64_t sampleRate = intScalar(ctx, 2, "sample_rate");
  const double lower = floatScalar(ctx, 3, "lower_edge_hertz");
  const double upper = floatScalar(ctx, 4, "upper_edge_hertz");
  if (melBins < 1) ctx.fail(fmt::format("num_mel_bins must be at least 1, got {}", melBins));
  if (dftLength < 1) ctx.fail(fmt::format("dft_length must be at least 1, got {}", dftLength));
  if (sampleRate < 1) ctx.fail(fmt::format("sample_rate must be at least 1, got {}", sampleRate));
  if (lower < 0 || lower > upper) {
    ctx.fail(
        fmt::format("need 0 <= lower_edge_hertz <= upper_edge_hertz, got lower_edge_hertz {} and "
                    "upper_edge_hertz {}",
                    lower, upper));
  }
  const int64_t spectrogramBins = dftLength / 2 + 1;
  const double binsPerHertz =
      (static_cast<double>(dftLength) + 1.0) / static_cast<double>(sampleRate);
  auto binOf = [&](double hz) { return std::floor(hz * binsPerHertz); };
  if (binOf(upper) >= static_cast<double>(spectrogramBins)) {
    ctx.fail(fmt::format(
        "upper_edge_hertz {} maps to spectrogram bin {}, past the last bin ({}) of a {}-point DFT "
        "at sample rate {}",
        upper, binOf(upper), spectrogramBins - 1, dftLength, sampleRate));
  }
  const auto lowestBin = static_cast<int64_t>(binOf(lower));
  const auto highestBin = static_cast<int64_t>(binOf(upper));

  const DataType type = outputDatatype(ctx);
  Array out = Array::zeros(type, {spectrogramBins, melBins});
  Array points(DataType::Int64, {melBins + 2});
  int64_t* p = points.data<int64_t>();
  const double lowMel = hertzToMel(lower);
  const double melStep = (hertzToMel(upper) - lowMel) / static_cast<double>(melBins + 2);
  for (int64_t i = 0; i < melBins + 2; ++i) {
    auto bin = static_cast<int64_t>(binOf(melToHertz(lowMel + melStep * static_cast<double>(i))));
    // The mel round trip may land a hair outside the edges checked above.
    p[i] = std::clamp(bin, lowestBin, highestBin);
  }
  dispatchNumeric(type, [&]<class T>(TypeTag<T>) {
    T* o = out.data<T>();
    auto set = [&](int64_t bin, int64_t band, double v) {
      o[bin * melBins + band] = fromDouble<T>(v);
    };
    for (int64_t band = 0; band < melBins; ++band) {
      int64_t left = p[band], center = p[band + 1], right = p[band + 2];
      if (center == left) {
        set(center, band, 1.0);
      } else {
        for (int64_t j = left; j <= center; ++j) {
          set(j, band, static_cast<double>(j - left) / static_cast<double>(center - left));
        }
      }
      for (int64_t j = center; j < right; ++j) {
        set(j, band, static_cast<double>(right - j) / static_cast<double>(right - center));
      }
    }
  });
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void registerSignalKernels(KernelRegistry& r) {
  r.add({
      {"DFT", 17, dft},
      {"DFT", 20, dft},
      {"STFT", 17, stft},
      {"HannWindow", 17, hannWindow},
      {"HammingWindow", 17, hammingWindow},
      {"BlackmanWindow", 17, blackmanWindow},
      {"MelWeightMatrix", 17, melWeightMatrix},
  });
}

}  // namespace qopt::interp
