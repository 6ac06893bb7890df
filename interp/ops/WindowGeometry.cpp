#include "WindowGeometry.h"

#include <fmt/format.h>

#include <algorithm>

namespace qopt::interp {

namespace {

std::vector<int64_t> perAxisAttr(const KernelContext& ctx, const char* name, int64_t rank,
                                 int64_t fallback) {
  std::vector<int64_t> values = ctx.node.attrInts(name);
  if (values.empty()) return std::vector<int64_t>(static_cast<size_t>(rank), fallback);
  if (static_cast<int64_t>(values.size()) != rank) {
    ctx.fail(
        fmt::format("attribute '{}' has {} values for {} spatial axes", name, values.size(), rank));
  }
  return values;
}

}  // namespace

bool WindowGeometry::isPointwise() const {
  for (int64_t i = 0; i < spatialRank; ++i) {
    size_t a = static_cast<size_t>(i);
    if (kernel[a] != 1 || strides[a] != 1 || padsBegin[a] != 0 || padsEnd[a] != 0) return false;
  }
  return true;
}

WindowGeometry windowGeometry(const KernelContext& ctx, const Shape& x,
                              const WindowOptions& options) {
  if (x.size() < 3) {
    ctx.fail(
        fmt::format("input must have rank >= 3 ([N, C, spatial...]), got [{}]", fmt::join(x, ",")));
  }
  WindowGeometry g;
  g.spatialRank = static_cast<int64_t>(x.size()) - 2;
  const int64_t rank = g.spatialRank;
  g.input.assign(x.begin() + 2, x.end());

  std::vector<int64_t> attrKernel = ctx.node.attrInts("kernel_shape");
  if (!options.kernelFromWeights.empty()) {
    g.kernel = options.kernelFromWeights;
    if (!attrKernel.empty() && attrKernel != g.kernel) {
      ctx.fail(fmt::format("kernel_shape [{}] does not match the weights' spatial dims [{}]",
                           fmt::join(attrKernel, ","), fmt::join(g.kernel, ",")));
    }
  } else {
    if (attrKernel.empty()) ctx.fail("attribute 'kernel_shape' is required");
    g.kernel = attrKernel;
  }
  if (static_cast<int64_t>(g.kernel.size()) != rank) {
    ctx.fail(
        fmt::format("kernel has {} dims for an input with {} spatial axes", g.kernel.size(), rank));
  }
  g.strides = perAxisAttr(ctx, "strides", rank, 1);
  if (!options.allowDilations && ctx.node.hasAttr("dilations")) {
    ctx.fail("attribute 'dilations' is not part of this opset of the op");
  }
  g.dilations = perAxisAttr(ctx, "dilations", rank, 1);
  for (int64_t i = 0; i < rank; ++i) {
    size_t a = static_cast<size_t>(i);
    if (g.kernel[a] <= 0 || g.strides[a] <= 0 || g.dilations[a] <= 0) {
      ctx.fail(fmt::format("kernel_shape, strides and dilations must be positive (axis {})", i));
    }
  }

  const bool ceilMode = options.allowCeilMode && ctx.node.attrInt("ceil_mode", 0) != 0;
  const std::string autoPad = ctx.node.attrString("auto_pad", "NOTSET");
  g.padsBegin.assign(static_cast<size_t>(rank), 0);
  g.padsEnd.assign(static_cast<size_t>(rank), 0);
  g.output.assign(static_cast<size_t>(rank), 0);
  if (autoPad == "NOTSET") {
    std::vector<int64_t> pads = ctx.node.attrInts("pads");
    if (!pads.empty()) {
      if (static_cast<int64_t>(pads.size()) != 2 * rank) {
        ctx.fail(fmt::format("attribute 'pads' has {} values, expected {}", pads.size(), 2 * rank));
      }
      for (int64_t i = 0; i < rank; ++i) {
        g.padsBegin[static_cast<size_t>(i)] = pads[static_cast<size_t>(i)];
        g.padsEnd[static_cast<size_t>(i)] = pads[static_cast<size_t>(i + rank)];
      }
    }
  } else if (autoPad != "VALID" && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    ctx.fail(fmt::format("unknown auto_pad '{}'", autoPad));
  }

  for (int64_t i = 0; i < rank; ++i) {
    size_t a = static_cast<size_t>(i);
    const int64_t in = g.input[a];
    const int64_t extent = (g.kernel[a] - 1) * g.dilations[a] + 1;
    const int64_t stride = g.strides[a];
    if (g.padsBegin[a] < 0 || g.padsEnd[a] < 0) ctx.fail("negative pads are not supported");
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      const int64_t out = (in + stride - 1) / stride;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
      const int64_t small = total / 2;
      g.padsBegin[a] = autoPad == "SAME_UPPER" ? small : total - small;
      g.padsEnd[a] = total - g.padsBegin[a];
      g.output[a] = out;
      continue;
    }
    const int64_t span = in + g.padsBegin[a] + g.padsEnd[a] - extent;
    if (span < 0) {
      ctx.fail(
          fmt::format("the window ({} with dilation) is larger than the padded input ({}) "
                      "on spatial axis {}",
                      extent, in + g.padsBegin[a] + g.padsEnd[a], i));
    }
    int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
    // With ceil_mode, a last window that would start inside the end padding is dropped.
    if (ceilMode && (out - 1) * stride >= in + g.padsBegin[a]) --out;
    g.output[a] = out;
  }
  return g;
}

Shape windowOutputShape(const Shape& x, int64_t channels, const WindowGeometry& g) {
  Shape out{x[0], channels};
  out.insert(out.end(), g.output.begin(), g.output.end());
  return out;
}

}  // namespace qopt::interp
