#include "DirectBlocked.h"

#include <algorithm>
#include <vector>

#include "Epilogue.h"
#include "Lanes.h"
#include "ScratchBuffer.h"
#include "ThreadPool.h"
#include "VectorClones.h"

namespace qopt::interp {

namespace {

using lanes::kLanes;
using lanes::load;
using lanes::storeChannels;
using lanes::Vec;

// Output pixels per work item (a multiple of kLanes).
constexpr int64_t kPixelsPerItem = 1024;

struct Plan {
  int64_t paddedRows = 0, paddedCols = 0, planeSize = 0;
  std::vector<int64_t> offsets;  // per (input channel, ky, kx), in floats from the window's corner
};

Plan planOf(const ConvShape& s, const WindowGeometry& g) {
  Plan p;
  p.paddedRows = std::max(g.input[0] + g.padsBegin[0], (g.output[0] - 1) * g.strides[0] +
                                                           (g.kernel[0] - 1) * g.dilations[0] + 1);
  p.paddedCols = std::max(g.input[1] + g.padsBegin[1], (g.output[1] - 1) * g.strides[1] +
                                                           (g.kernel[1] - 1) * g.dilations[1] + 1);
  p.planeSize = p.paddedRows * p.paddedCols;
  for (int64_t c = 0; c < s.channels; ++c) {
    for (int64_t ky = 0; ky < g.kernel[0]; ++ky) {
      for (int64_t kx = 0; kx < g.kernel[1]; ++kx) {
        p.offsets.push_back(c * p.planeSize + ky * g.dilations[0] * p.paddedCols +
                            kx * g.dilations[1]);
      }
    }
  }
  return p;
}

// One image's input planes, zero-padded.
void padImage(const float* x, int64_t channels, const WindowGeometry& g, const Plan& p,
              float* padded) {
  const int64_t ih = g.input[0], iw = g.input[1];
  const int64_t ph = g.padsBegin[0], pw = g.padsBegin[1];
  for (int64_t c = 0; c < channels; ++c) {
    float* plane = padded + c * p.planeSize;
    const float* src = x + c * ih * iw;
    std::fill(plane, plane + ph * p.paddedCols, 0.0f);
    for (int64_t iy = 0; iy < ih; ++iy) {
      float* row = plane + (iy + ph) * p.paddedCols;
      std::fill(row, row + pw, 0.0f);
      std::copy(src + iy * iw, src + (iy + 1) * iw, row + pw);
      std::fill(row + pw + iw, row + p.paddedCols, 0.0f);
    }
    std::fill(plane + (ih + ph) * p.paddedCols, plane + p.planeSize, 0.0f);
  }
}

QOPT_VECTOR_CLONES
void directPixels(const lanes::FilterLanes& grp, const float* padded, const WindowGeometry& g,
                  const Plan& p, int64_t q0, int64_t q1) {
  const int64_t ow = g.output[1];
  const int64_t sh = g.strides[0], sw = g.strides[1];
  const int64_t products = static_cast<int64_t>(p.offsets.size());
  const int64_t* offsets = p.offsets.data();
  const float* weights = grp.weights.data();
  const bool wide = lanes::wideRegisters();
  for (int64_t q = q0; q < q1; q += kLanes) {
    const int64_t n = std::min(kLanes, q1 - q);
    const float* base[kLanes];
    lanes::windowStarts(base, padded, q, n, ow, 0, sh * p.paddedCols, sw);
    Vec acc[kLanes];
    lanes::multiplyAccumulate<true>(acc, base, grp.bias, weights, offsets, products, wide);
    storeChannels(acc, grp, q, n);
  }
}

}  // namespace

bool directBlockedFits(const ConvShape& s, const WindowGeometry& g, int64_t maxReduction) {
  return g.spatialRank == 2 && s.groups == 1 && s.channels * g.kernelSize() <= maxReduction;
}

void directBlocked(const float* x, const float* w, const float* bias, float* y, const ConvShape& s,
                   const WindowGeometry& g, ThreadPool* pool, const ConvEpilogue* epilogue,
                   const float* residual) {
  const Plan plan = planOf(s, g);
  const int64_t products = static_cast<int64_t>(plan.offsets.size());
  const int64_t outSize = g.outputSize();
  const int64_t filterGroups = (s.filters + kLanes - 1) / kLanes;
  const int64_t pixelItems = (outSize + kPixelsPerItem - 1) / kPixelsPerItem;

  // Weights, bias and epilogues per group of 16 filters; outputs are set per image.
  std::vector<lanes::FilterLanes> groups(static_cast<size_t>(filterGroups));
  for (int64_t gi = 0; gi < filterGroups; ++gi) {
    groups[static_cast<size_t>(gi)].setFilters(w, products, bias, epilogue, gi * kLanes, s.filters);
  }

  float* padded = threadScratch<float>(s.channels * plan.planeSize);
  for (int64_t n = 0; n < s.batch; ++n) {
    padImage(x + n * s.channels * g.inputSize(), s.channels, g, plan, padded);
    for (int64_t gi = 0; gi < filterGroups; ++gi) {
      groups[static_cast<size_t>(gi)].setOutputs(y, residual, n, gi * kLanes, s.filters, outSize);
    }
    parallelFor(pool, filterGroups * pixelItems, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t item = i0; item < i1; ++item) {
        const int64_t q0 = (item % pixelItems) * kPixelsPerItem;
        directPixels(groups[static_cast<size_t>(item / pixelItems)], padded, g, plan, q0,
                     std::min(outSize, q0 + kPixelsPerItem));
      }
    });
  }
}

}  // namespace qopt::interp
