// NonMaxSuppression, as detection exporters emit it. Registered with the misc group.
#include <algorithm>
#include <numeric>

#include "KernelSupport.h"

namespace qopt::interp {

namespace {

struct Box {
  float y1, x1, y2, x2;
  float area() const { return (y2 - y1) * (x2 - x1); }
};

Box boxAt(const Array& boxes, int64_t offset, bool centerPoint) {
  std::vector<float> v(4);
  for (int i = 0; i < 4; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(boxes.getDouble(offset + i));
  if (centerPoint) {  // [x_center, y_center, width, height]
    return {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
  }
  // [y1, x1, y2, x2] with the corners in either order.
  return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

float iou(const Box& a, const Box& b) {
  float h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  float w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0) return 0;
  float inter = h * w;
  float uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0;
}

void nonMaxSuppression(KernelContext& ctx) {
  const Array& boxes = ctx.in(0);
  const Array& scores = ctx.in(1);
  int64_t maxPerClass =
      ctx.optIn(2) && ctx.optIn(2)->numel() > 0
          ? static_cast<int64_t>(scalarValue(*ctx.optIn(2), "max_output_boxes_per_class"))
          : 0;
  float iouThreshold = ctx.optIn(3) && ctx.optIn(3)->numel() > 0
                           ? static_cast<float>(scalarValue(*ctx.optIn(3), "iou_threshold"))
                           : 0.0f;
  bool hasScoreThreshold = ctx.optIn(4) && ctx.optIn(4)->numel() > 0;
  float scoreThreshold =
      hasScoreThreshold ? static_cast<float>(scalarValue(*ctx.optIn(4), "score_threshold")) : 0.0f;
  bool centerPoint = ctx.node.attrInt("center_point_box", 0) != 0;
  if (boxes.rank() != 3 || boxes.shape()[2] != 4)
    ctx.fail("boxes must have shape [batch, boxes, 4]");
  if (scores.rank() != 3 || scores.shape()[0] != boxes.shape()[0] ||
      scores.shape()[2] != boxes.shape()[1]) {
    ctx.fail("scores must have shape [batch, classes, boxes]");
  }
  int64_t batches = boxes.shape()[0], n = boxes.shape()[1], classes = scores.shape()[1];
  std::vector<int64_t> selected;  // triples
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<Box> all;
    for (int64_t i = 0; i < n; ++i) all.push_back(boxAt(boxes, (b * n + i) * 4, centerPoint));
    for (int64_t c = 0; c < classes; ++c) {
      std::vector<std::pair<float, int64_t>> candidates;
      for (int64_t i = 0; i < n; ++i) {
        auto s = static_cast<float>(scores.getDouble((b * classes + c) * n + i));
        if (!hasScoreThreshold || s > scoreThreshold) candidates.push_back({s, i});
      }
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const auto& p, const auto& q) { return p.first > q.first; });
      std::vector<int64_t> kept;
      for (const auto& candidate : candidates) {
        int64_t i = candidate.second;  // a plain variable: clang 14 cannot capture bindings
        if (static_cast<int64_t>(kept.size()) >= maxPerClass) break;
        bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t k) {
          return iou(all[static_cast<size_t>(k)], all[static_cast<size_t>(i)]) > iouThreshold;
        });
        if (!suppressed) kept.push_back(i);
      }
      for (int64_t i : kept) selected.insert(selected.end(), {b, c, i});
    }
  }
  Array out(DataType::Int64, {static_cast<int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), out.data<int64_t>());
  ctx.outputs[0] = std::move(out);
}

}  // namespace

// Called from registerMiscKernels.
void registerDetectionKernels(KernelRegistry& r) {
  r.add("", "NonMaxSuppression", 10, nonMaxSuppression);
}

}  // namespace qopt::interp
