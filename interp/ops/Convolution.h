// Convolution drivers: im2col + GEMM (oneDNN's sgemm, OpenBLAS for double) for ordinary
// convolutions, direct kernels for depthwise ones (a GEMM with one row per output is mostly
// overhead; DepthwiseBlocked.h for float) and for float ones with few products per output
// (DirectBlocked.h), GEMM + col2im for ConvTranspose, and an exact integer path for ConvInteger
// and QLinearConv. All layouts are NCHW (NC + any number of spatial dims).
#pragma once

#include <cstdint>

#include "WindowGeometry.h"

namespace qopt::interp {

class ThreadPool;
struct ConvEpilogue;

struct ConvShape {
  int64_t batch = 0;
  int64_t channels = 0;  // input channels (all groups)
  int64_t filters = 0;   // output channels (all groups)
  int64_t groups = 1;
};

/// y[N, M, out...] = conv(x[N, C, in...], w[M, C / groups, k...]) + bias[M] (bias may be null).
/// T is float or double; accumulation is in T. A float convolution may apply `epilogue` (null:
/// none) to each output tile right after computing it; `residual` is the tensor of y's shape
/// that the epilogue adds, if it adds one.
template <class T>
void convolve(const T* x, const T* w, const T* bias, T* y, const ConvShape& s,
              const WindowGeometry& g, ThreadPool* pool, const ConvEpilogue* epilogue = nullptr,
              const T* residual = nullptr);

/// ConvTranspose: y[N, M, out...] from x[N, C, in...] and w[C, M / groups, k...]. Here `g.input`
/// is x's spatial dims and `g.output` y's; pads are those of the forward convolution that maps y
/// back to x.
template <class T>
void convolveTranspose(const T* x, const T* w, const T* bias, T* y, const ConvShape& s,
                       const WindowGeometry& g, ThreadPool* pool);

/// acc[N, M, out...] = sum (x - xZero) * (w - wZero[m]) exactly, in int32. `wZeroStride` is 0
/// (per tensor) or 1 (per output channel). Padding contributes nothing.
template <class TX, class TW>
void convolveInteger(const TX* x, TX xZero, const TW* w, const TW* wZero, int64_t wZeroStride,
                     int32_t* acc, const ConvShape& s, const WindowGeometry& g, ThreadPool* pool);

}  // namespace qopt::interp
