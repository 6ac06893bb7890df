// The sliding-window geometry shared by Conv, ConvInteger, QLinearConv and the pooling ops:
// kernel, strides, dilations and pads per spatial axis (auto_pad resolved), and the output size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/interp/Kernel.h"

namespace qopt::interp {

struct WindowGeometry {
  int64_t spatialRank = 0;
  std::vector<int64_t> input;  // spatial input dims
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> padsBegin;
  std::vector<int64_t> padsEnd;
  std::vector<int64_t> output;  // spatial output dims

  // Element counts of the spatial dims. Inline, so that programs built without the interpreter
  // library (bench/interp/conv_backends_bench.cpp) can use them too.
  int64_t inputSize() const { return elements(input); }
  int64_t outputSize() const { return elements(output); }
  int64_t kernelSize() const { return elements(kernel); }
  static int64_t elements(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  /// True when every kernel dim is 1 with stride 1 and no padding: the input is the GEMM operand.
  bool isPointwise() const;
};

struct WindowOptions {
  /// Kernel dims taken from the weights (Conv); empty to read `kernel_shape` (pooling).
  std::vector<int64_t> kernelFromWeights;
  /// Pooling: honour `ceil_mode`.
  bool allowCeilMode = false;
  /// Pooling before opset 10 / AveragePool before 19 have no `dilations` attribute.
  bool allowDilations = true;
};

/// Reads kernel_shape, strides, dilations, pads and auto_pad of ctx.node for an input of shape
/// `x` ([N, C, spatial...]) and computes the output dims. Throws (through ctx.fail) on
/// inconsistent attributes or an empty output.
WindowGeometry windowGeometry(const KernelContext& ctx, const Shape& x,
                              const WindowOptions& options);

/// Returns the output shape [N, channels, output...].
Shape windowOutputShape(const Shape& x, int64_t channels, const WindowGeometry& g);

}  // namespace qopt::interp
