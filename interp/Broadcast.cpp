#include "Broadcast.h"

#include <fmt/format.h>

#include <algorithm>

#include "qopt/ir/Error.h"

namespace qopt::interp {

Shape broadcastShapes(std::span<const Shape* const> shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes) {
    size_t offset = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t d = (*s)[i];
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::vector<std::string> all;
      for (const Shape* t : shapes) all.push_back(fmt::format("[{}]", fmt::join(*t, ",")));
      throw Error(fmt::format("shapes {} cannot be broadcast together", fmt::join(all, " and ")));
    }
  }
  return out;
}

Shape broadcastShapes(const Shape& a, const Shape& b) {
  const Shape* both[] = {&a, &b};
  return broadcastShapes(both);
}

BroadcastLoop::BroadcastLoop(std::span<const Shape* const> inputs, const Shape& out) {
  size_t n = inputs.size();
  size_t rank = out.size();
  // Per input and output dim: 1 when the input varies along it, 0 when broadcast.
  std::vector<std::vector<char>> varies(n, std::vector<char>(rank, 0));
  for (size_t k = 0; k < n; ++k) {
    const Shape& s = *inputs[k];
    if (s.size() > rank) {
      throw Error(fmt::format("shape [{}] does not broadcast to [{}]", fmt::join(s, ","),
                              fmt::join(out, ",")));
    }
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == out[offset + i]) {
        varies[k][offset + i] = out[offset + i] != 1;
      } else if (s[i] != 1) {
        throw Error(fmt::format("shape [{}] does not broadcast to [{}]", fmt::join(s, ","),
                                fmt::join(out, ",")));
      }
    }
  }
  // Collapse: drop size-1 output dims, merge neighbours every input treats alike.
  std::vector<int64_t> dims;
  std::vector<std::vector<char>> pattern(n);
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool same = !dims.empty();
    for (size_t k = 0; k < n && same; ++k) same = pattern[k].back() == varies[k][d];
    if (same) {
      dims.back() *= out[d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < n; ++k) pattern[k].push_back(varies[k][d]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (size_t k = 0; k < n; ++k) pattern[k].push_back(0);
  }
  dims_ = dims;
  strides_.assign(n, std::vector<int64_t>(dims.size(), 0));
  for (size_t k = 0; k < n; ++k) {
    int64_t stride = 1;
    for (size_t d = dims.size(); d-- > 0;) {
      if (pattern[k][d]) {
        strides_[k][d] = stride;
        stride *= dims[d];
      }
    }
  }
  inner_ = dims.back();
  innerStride_.resize(n);
  for (size_t k = 0; k < n; ++k) innerStride_[k] = strides_[k].back();
  numel_ = 1;
  for (int64_t d : out) numel_ *= d;
  rows_ = inner_ == 0 ? 0 : numel_ / inner_;
  if (numel_ == 0) rows_ = 0;
}

}  // namespace qopt::interp
